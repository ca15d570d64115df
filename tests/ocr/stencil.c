/* SPDX-License-Identifier: MIT */
/* A 1-D heat stencil in blocks: one EDT per block and iteration, reading its
 * block and both neighbours of the previous iteration in CONST mode through
 * STICKY events, writing a new data block. The last EDT compares every point
 * with a serial computation done the same way.
 *
 *   ./stencil [blocks=8] [points per block=64] [iterations=40]  */
#include <stdlib.h>
#include <string.h>

#include "ocr.h"

typedef struct {
    u64 blocks, points, iterations;
} config_t;

static double initial(u64 i) {
    return (double)((i * 7919U) % 101U);
}

static void step(const double* left, const double* mid, const double* right, double* out, u64 points) {
    for (u64 i = 0; i < points; ++i) {
        const double l = i > 0 ? mid[i - 1] : (left != NULL ? left[points - 1] : mid[0]);
        const double r = i + 1 < points ? mid[i + 1] : (right != NULL ? right[0] : mid[points - 1]);
        out[i] = 0.25 * l + 0.5 * mid[i] + 0.25 * r;
    }
}

/* paramv: points, event to satisfy with the new block */
static ocrGuid_t blockEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    (void)paramc;
    (void)depc;
    const u64 points = paramv[0];
    ocrGuid_t out_event;
    memcpy(&out_event, &paramv[1], sizeof out_event);
    double* out;
    ocrGuid_t db;
    ocrDbCreate(&db, (void**)&out, points * sizeof(double), DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    step((const double*)depv[0].ptr, (const double*)depv[1].ptr, (const double*)depv[2].ptr, out, points);
    ocrDbRelease(db);
    ocrEventSatisfy(out_event, db);
    return NULL_GUID;
}

/* paramv: blocks, points, iterations; depv: the last iteration's blocks */
static ocrGuid_t checkEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    (void)paramc;
    const config_t c = {paramv[0], paramv[1], paramv[2]};
    const u64 n = c.blocks * c.points;
    double* a = malloc(n * sizeof(double));
    double* b = malloc(n * sizeof(double));
    for (u64 i = 0; i < n; ++i) a[i] = initial(i);
    for (u64 t = 0; t < c.iterations; ++t) {
        for (u64 k = 0; k < c.blocks; ++k) {
            step(k > 0 ? a + (k - 1) * c.points : NULL, a + k * c.points,
                 k + 1 < c.blocks ? a + (k + 1) * c.points : NULL, b + k * c.points, c.points);
        }
        double* tmp = a;
        a = b;
        b = tmp;
    }
    u64 wrong = 0;
    double checksum = 0;
    for (u32 k = 0; k < depc; ++k) {
        const double* got = (const double*)depv[k].ptr;
        for (u64 i = 0; i < c.points; ++i) {
            checksum += got[i];
            if (got[i] != a[k * c.points + i]) ++wrong;
        }
    }
    free(a);
    free(b);
    ocrPrintf(
        "stencil: %llu blocks x %llu points, %llu iterations: checksum %.6f, %llu points differ from the serial "
        "result\n",
        (unsigned long long)c.blocks, (unsigned long long)c.points, (unsigned long long)c.iterations, checksum,
        (unsigned long long)wrong);
    if (wrong != 0) {
        ocrAbort(3);
    } else {
        ocrShutdown();
    }
    return NULL_GUID;
}

static u64 arg(void* args, u64 i, u64 fallback) {
    return ocrGetArgc(args) > i ? strtoull(ocrGetArgv(args, i), NULL, 10) : fallback;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    (void)paramc;
    (void)paramv;
    (void)depc;
    const config_t c = {arg(depv[0].ptr, 1, 8), arg(depv[0].ptr, 2, 64), arg(depv[0].ptr, 3, 40)};
    ocrGuid_t* events = malloc((c.iterations + 1) * c.blocks * sizeof(ocrGuid_t));
    for (u64 i = 0; i < (c.iterations + 1) * c.blocks; ++i) {
        ocrEventCreate(&events[i], OCR_EVENT_STICKY_T, EVT_PROP_TAKES_ARG);
    }
    ocrGuid_t block_template, check_template, edt;
    ocrEdtTemplateCreate(&block_template, blockEdt, 2, 3);
    ocrEdtTemplateCreate(&check_template, checkEdt, 3, EDT_PARAM_UNK);
    u64 check_params[3] = {c.blocks, c.points, c.iterations};
    ocrEdtCreate(&edt, check_template, 3, check_params, (u32)c.blocks, NULL, EDT_PROP_NONE, NULL_HINT, NULL);
    for (u64 k = 0; k < c.blocks; ++k) {
        ocrAddDependence(events[c.iterations * c.blocks + k], edt, (u32)k, DB_MODE_CONST);
    }
    for (u64 t = 1; t <= c.iterations; ++t) {
        for (u64 k = 0; k < c.blocks; ++k) {
            u64 params[2] = {c.points, 0};
            memcpy(&params[1], &events[t * c.blocks + k], sizeof(ocrGuid_t));
            ocrEdtCreate(&edt, block_template, EDT_PARAM_DEF, params, EDT_PARAM_DEF, NULL, EDT_PROP_NONE, NULL_HINT,
                         NULL);
            const ocrGuid_t* previous = &events[(t - 1) * c.blocks];
            ocrAddDependence(k > 0 ? previous[k - 1] : NULL_GUID, edt, 0, DB_MODE_CONST);
            ocrAddDependence(previous[k], edt, 1, DB_MODE_CONST);
            ocrAddDependence(k + 1 < c.blocks ? previous[k + 1] : NULL_GUID, edt, 2, DB_MODE_CONST);
        }
    }
    for (u64 k = 0; k < c.blocks; ++k) {
        double* data;
        ocrGuid_t db;
        ocrDbCreate(&db, (void**)&data, c.points * sizeof(double), DB_PROP_NONE, NULL_HINT, NO_ALLOC);
        for (u64 i = 0; i < c.points; ++i) data[i] = initial(k * c.points + i);
        ocrDbRelease(db);
        ocrEventSatisfy(events[k], db);
    }
    free(events);
    return NULL_GUID;
}
