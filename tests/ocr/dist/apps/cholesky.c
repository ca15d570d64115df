/* SPDX-License-Identifier: MIT */
/* Tiled Cholesky factorization A = L L^T across the ranks of a job: tests/ocr/apps/cholesky.c
 * with every tile and the tasks that write it placed on the tile's rank by affinity (the
 * lower-triangle tiles dealt round-robin), and the problem's sizes in each task's parameters
 * instead of a global (each rank is its own process). A task on another rank than its hint
 * named aborts with a message (dist_test.h, CHECK).
 *
 *   cholesky <n> <tile> <in.bin> <out.bin>
 *
 * in.bin: n*n doubles, row major, symmetric positive definite. out.bin: L
 * (lower triangle, zeros above). Each tile is a data block; the version of
 * tile (i,j) after step k is announced by a labeled STICKY event
 * E(k,i,j), satisfied with the tile's block, so every task names its inputs
 * by computing GUIDs, as OCR programs do with labels. Tasks: POTRF(k) on the
 * diagonal tile, TRSM(k,i) below it, SYRK(k,i) and GEMM(k,i,j) updating the
 * trailing matrix. Exit 0 after writing L; ocrAbort(2) on bad input. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "dist_test.h"
#include "extensions/ocr-labeling.h"

/* The first parameters of every task: the problem. */
enum { P_N, P_T, P_NT, P_RANGE, P_TASK };

static ocrGuid_t version(const u64* p, u64 k, u64 i, u64 j) {
    ocrGuid_t g, range = {.guid = p[P_RANGE]};
    ocrGuidFromIndex(&g, range, (k * p[P_NT] + i) * p[P_NT] + j);
    return g;
}

/* The rank of tile (i, j), j <= i: the lower-triangle tiles dealt round-robin. */
static u64 owner(u64 i, u64 j) {
    return (i * (i + 1) / 2 + j) % rank_count();
}

#define ON_OWNER(i, j)                                                                                           \
    CHECK(current_rank() == owner(i, j), "the task of tile (%d,%d) runs on rank %d, not %d", (int)(i), (int)(j), \
          (int)current_rank(), (int)owner(i, j))

/* Publishes a tile's new version: release our writes first. */
static void publish(const u64* p, ocrGuid_t tile, u64 k, u64 i, u64 j) {
    ocrDbRelease(tile);
    ocrEventSatisfy(version(p, k, i, j), tile);
}

static ocrGuid_t potrf(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    u64 k = paramv[P_TASK], t = paramv[P_T];
    ON_OWNER(k, k);
    double* a = (double*)depv[0].ptr;
    for (u64 j = 0; j < t; ++j) {
        double d = a[j * t + j];
        for (u64 p = 0; p < j; ++p) d -= a[j * t + p] * a[j * t + p];
        if (d <= 0) {
            ocrPrintf("cholesky: the matrix is not positive definite (tile %d)\n", (int)k);
            ocrAbort(3);
            return NULL_GUID;
        }
        d = sqrt(d);
        a[j * t + j] = d;
        for (u64 i = j + 1; i < t; ++i) {
            double s = a[i * t + j];
            for (u64 p = 0; p < j; ++p) s -= a[i * t + p] * a[j * t + p];
            a[i * t + j] = s / d;
        }
        for (u64 i = 0; i < j; ++i) a[i * t + j] = 0; /* upper part of the diagonal tile */
    }
    publish(paramv, depv[0].guid, k + 1, k, k);
    return NULL_GUID;
}

/* A(i,k) <- A(i,k) L(k,k)^-T */
static ocrGuid_t trsm(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    u64 k = paramv[P_TASK], i = paramv[P_TASK + 1], t = paramv[P_T];
    ON_OWNER(i, k);
    double* a = (double*)depv[0].ptr;
    const double* l = (const double*)depv[1].ptr;
    for (u64 r = 0; r < t; ++r) {
        for (u64 c = 0; c < t; ++c) {
            double s = a[r * t + c];
            for (u64 p = 0; p < c; ++p) s -= a[r * t + p] * l[c * t + p];
            a[r * t + c] = s / l[c * t + c];
        }
    }
    publish(paramv, depv[0].guid, k + 1, i, k);
    return NULL_GUID;
}

/* A(i,j) <- A(i,j) - L(i,k) L(j,k)^T (SYRK when i == j, with depv[1] == depv[2]) */
static ocrGuid_t update(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    u64 k = paramv[P_TASK], i = paramv[P_TASK + 1], j = paramv[P_TASK + 2], t = paramv[P_T];
    ON_OWNER(i, j);
    double* a = (double*)depv[0].ptr;
    const double* li = (const double*)depv[1].ptr;
    const double* lj = (const double*)depv[depc - 1].ptr;
    for (u64 r = 0; r < t; ++r) {
        for (u64 c = 0; c < t; ++c) {
            double s = 0;
            for (u64 p = 0; p < t; ++p) s += li[r * t + p] * lj[c * t + p];
            a[r * t + c] -= s;
        }
    }
    publish(paramv, depv[0].guid, k + 1, i, j);
    return NULL_GUID;
}

static ocrGuid_t output(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    const char* path = (const char*)depv[0].ptr;
    u64 n = paramv[P_N], t = paramv[P_T], nt = paramv[P_NT];
    double* l = calloc(n * n, sizeof(double));
    for (u64 i = 0; i < nt; ++i) {
        for (u64 j = 0; j <= i; ++j) {
            const double* tile = (const double*)depv[1 + i * (i + 1) / 2 + j].ptr;
            for (u64 r = 0; r < t; ++r)
                for (u64 c = 0; c < t; ++c) l[(i * t + r) * n + j * t + c] = tile[r * t + c];
        }
    }
    FILE* f = fopen(path, "wb");
    if (f == NULL || fwrite(l, sizeof(double), n * n, f) != n * n || fclose(f) != 0) {
        ocrPrintf("cholesky: cannot write %s\n", path);
        ocrAbort(4);
    } else {
        ocrPrintf("cholesky: n=%d tile=%d: %d tasks, L written to %s\n", (int)n, (int)t,
                  (int)(nt + nt * (nt - 1) / 2 + nt * (nt - 1) * (nt + 1) / 6), path);
        ocrShutdown();
    }
    free(l);
    return NULL_GUID;
}

/* A task writing tile (i, j), on its rank. */
static ocrGuid_t edt(ocrGuid_t tpl, u64* params, u32 paramc, u32 depc, ocrGuid_t* deps, u64 i, u64 j) {
    ocrGuid_t g;
    ocrHint_t hint;
    ocrEdtCreate(&g, tpl, paramc, params, depc, NULL, EDT_PROP_NONE, on_rank(&hint, owner(i, j), 1), NULL);
    for (u32 s = 0; s < depc; ++s) ocrAddDependence(deps[s], g, s, s == 0 ? DB_MODE_RW : DB_MODE_RO);
    return g;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    if (getArgc(depv[0].ptr) != 5) {
        ocrPrintf("usage: cholesky <n> <tile> <in.bin> <out.bin>\n");
        ocrAbort(2);
        return NULL_GUID;
    }
    u64 p[P_TASK + 3];
    p[P_N] = strtoull(getArgv(depv[0].ptr, 1), NULL, 10);
    p[P_T] = strtoull(getArgv(depv[0].ptr, 2), NULL, 10);
    if (p[P_T] == 0 || p[P_N] == 0 || p[P_N] % p[P_T] != 0) {
        ocrPrintf("cholesky: n=%d must be a positive multiple of tile=%d\n", (int)p[P_N], (int)p[P_T]);
        ocrAbort(2);
        return NULL_GUID;
    }
    p[P_NT] = p[P_N] / p[P_T];
    u64 n = p[P_N], t = p[P_T], nt = p[P_NT];
    double* a = malloc(n * n * sizeof(double));
    FILE* f = fopen(getArgv(depv[0].ptr, 3), "rb");
    if (f == NULL || fread(a, sizeof(double), n * n, f) != n * n) {
        ocrPrintf("cholesky: cannot read %d doubles from %s\n", (int)(n * n), getArgv(depv[0].ptr, 3));
        ocrAbort(2);
        return NULL_GUID;
    }
    fclose(f);

    ocrGuid_t range;
    ocrGuidRangeCreate(&range, (nt + 1) * nt * nt, GUID_USER_EVENT_STICKY);
    p[P_RANGE] = (u64)range.guid;
    for (u64 k = 0; k <= nt; ++k)
        for (u64 i = 0; i < nt; ++i)
            for (u64 j = 0; j <= i; ++j) {
                ocrGuid_t e = version(p, k, i, j);
                ocrEventCreate(&e, OCR_EVENT_STICKY_T, GUID_PROP_IS_LABELED | EVT_PROP_TAKES_ARG);
            }

    ocrGuid_t tpotrf, ttrsm, tupdate, toutput;
    ocrEdtTemplateCreate(&tpotrf, potrf, P_TASK + 1, 1);
    ocrEdtTemplateCreate(&ttrsm, trsm, P_TASK + 2, 2);
    ocrEdtTemplateCreate(&tupdate, update, P_TASK + 3, EDT_PARAM_UNK);
    ocrEdtTemplateCreate(&toutput, output, P_TASK, EDT_PARAM_UNK);

    /* The output EDT takes the path and every final tile: (i,j) is final after step j+1. */
    u32 nfinal = (u32)(nt * (nt + 1) / 2);
    ocrGuid_t out;
    ocrEdtCreate(&out, toutput, P_TASK, p, 1 + nfinal, NULL, EDT_PROP_NONE, NULL_HINT, NULL);
    const char* path = getArgv(depv[0].ptr, 4);
    ocrGuid_t pathdb;
    char* text;
    u64 len = 0;
    while (path[len] != '\0') ++len;
    ocrDbCreate(&pathdb, (void**)&text, len + 1, DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    for (u64 c = 0; c <= len; ++c) text[c] = path[c];
    ocrDbRelease(pathdb);
    ocrAddDependence(pathdb, out, 0, DB_MODE_RO);
    for (u64 i = 0; i < nt; ++i)
        for (u64 j = 0; j <= i; ++j)
            ocrAddDependence(version(p, j + 1, i, j), out, (u32)(1 + i * (i + 1) / 2 + j), DB_MODE_RO);

    for (u64 k = 0; k < nt; ++k) {
        p[P_TASK] = k;
        ocrGuid_t d1[1] = {version(p, k, k, k)};
        edt(tpotrf, p, P_TASK + 1, 1, d1, k, k);
        for (u64 i = k + 1; i < nt; ++i) {
            p[P_TASK + 1] = i;
            ocrGuid_t d2[2] = {version(p, k, i, k), version(p, k + 1, k, k)};
            edt(ttrsm, p, P_TASK + 2, 2, d2, i, k);
        }
        for (u64 i = k + 1; i < nt; ++i)
            for (u64 j = k + 1; j <= i; ++j) {
                p[P_TASK + 1] = i;
                p[P_TASK + 2] = j;
                ocrGuid_t d3[3] = {version(p, k, i, j), version(p, k + 1, i, k), version(p, k + 1, j, k)};
                edt(tupdate, p, P_TASK + 3, i == j ? 2 : 3, d3, i, j);
            }
    }

    /* Step 0: the input tiles. */
    for (u64 i = 0; i < nt; ++i)
        for (u64 j = 0; j <= i; ++j) {
            ocrGuid_t tile;
            ocrHint_t hint;
            double* data;
            ocrDbCreate(&tile, (void**)&data, t * t * sizeof(double), DB_PROP_NONE, on_rank(&hint, owner(i, j), 0),
                        NO_ALLOC);
            for (u64 r = 0; r < t; ++r)
                for (u64 c = 0; c < t; ++c) data[r * t + c] = a[(i * t + r) * n + j * t + c];
            publish(p, tile, 0, i, j);
        }
    free(a);
    ocrEdtTemplateDestroy(tpotrf);
    ocrEdtTemplateDestroy(ttrsm);
    ocrEdtTemplateDestroy(tupdate);
    ocrEdtTemplateDestroy(toutput);
    return NULL_GUID;
}
