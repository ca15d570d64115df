/* SPDX-License-Identifier: MIT */
/* Tiled Cholesky factorization A = L L^T as an OCR program.
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

#include "extensions/ocr-labeling.h"
#include "ocr.h"

typedef struct {
    u64 n, t, nt;
    ocrGuid_t range;
} problem_t;

static problem_t P; /* read-only after mainEdt set it up, before any task runs */

static ocrGuid_t version(u64 k, u64 i, u64 j) {
    ocrGuid_t g;
    ocrGuidFromIndex(&g, P.range, (k * P.nt + i) * P.nt + j);
    return g;
}

/* Publishes a tile's new version: release our writes first. */
static void publish(ocrGuid_t tile, u64 k, u64 i, u64 j) {
    ocrDbRelease(tile);
    ocrEventSatisfy(version(k, i, j), tile);
}

static ocrGuid_t potrf(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    u64 k = paramv[0], t = P.t;
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
    publish(depv[0].guid, k + 1, k, k);
    return NULL_GUID;
}

/* A(i,k) <- A(i,k) L(k,k)^-T */
static ocrGuid_t trsm(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    u64 k = paramv[0], i = paramv[1], t = P.t;
    double* a = (double*)depv[0].ptr;
    const double* l = (const double*)depv[1].ptr;
    for (u64 r = 0; r < t; ++r) {
        for (u64 c = 0; c < t; ++c) {
            double s = a[r * t + c];
            for (u64 p = 0; p < c; ++p) s -= a[r * t + p] * l[c * t + p];
            a[r * t + c] = s / l[c * t + c];
        }
    }
    publish(depv[0].guid, k + 1, i, k);
    return NULL_GUID;
}

/* A(i,j) <- A(i,j) - L(i,k) L(j,k)^T (SYRK when i == j, with depv[1] == depv[2]) */
static ocrGuid_t update(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    u64 k = paramv[0], i = paramv[1], j = paramv[2], t = P.t;
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
    publish(depv[0].guid, k + 1, i, j);
    return NULL_GUID;
}

static ocrGuid_t output(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    const char* path = (const char*)depv[0].ptr;
    u64 n = P.n, t = P.t, nt = P.nt;
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

static ocrGuid_t edt(ocrGuid_t tpl, u64* params, u32 paramc, u32 depc, ocrGuid_t* deps) {
    ocrGuid_t g;
    ocrEdtCreate(&g, tpl, paramc, params, depc, NULL, EDT_PROP_NONE, NULL_HINT, NULL);
    for (u32 s = 0; s < depc; ++s) ocrAddDependence(deps[s], g, s, s == 0 ? DB_MODE_RW : DB_MODE_RO);
    return g;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    if (getArgc(depv[0].ptr) != 5) {
        ocrPrintf("usage: cholesky <n> <tile> <in.bin> <out.bin>\n");
        ocrAbort(2);
        return NULL_GUID;
    }
    P.n = strtoull(getArgv(depv[0].ptr, 1), NULL, 10);
    P.t = strtoull(getArgv(depv[0].ptr, 2), NULL, 10);
    if (P.t == 0 || P.n == 0 || P.n % P.t != 0) {
        ocrPrintf("cholesky: n=%d must be a positive multiple of tile=%d\n", (int)P.n, (int)P.t);
        ocrAbort(2);
        return NULL_GUID;
    }
    P.nt = P.n / P.t;
    u64 n = P.n, t = P.t, nt = P.nt;
    double* a = malloc(n * n * sizeof(double));
    FILE* f = fopen(getArgv(depv[0].ptr, 3), "rb");
    if (f == NULL || fread(a, sizeof(double), n * n, f) != n * n) {
        ocrPrintf("cholesky: cannot read %d doubles from %s\n", (int)(n * n), getArgv(depv[0].ptr, 3));
        ocrAbort(2);
        return NULL_GUID;
    }
    fclose(f);

    ocrGuidRangeCreate(&P.range, (nt + 1) * nt * nt, GUID_USER_EVENT_STICKY);
    for (u64 k = 0; k <= nt; ++k)
        for (u64 i = 0; i < nt; ++i)
            for (u64 j = 0; j <= i; ++j) {
                ocrGuid_t e = version(k, i, j);
                ocrEventCreate(&e, OCR_EVENT_STICKY_T, GUID_PROP_IS_LABELED | EVT_PROP_TAKES_ARG);
            }

    ocrGuid_t tpotrf, ttrsm, tupdate, toutput;
    ocrEdtTemplateCreate(&tpotrf, potrf, 1, 1);
    ocrEdtTemplateCreate(&ttrsm, trsm, 2, 2);
    ocrEdtTemplateCreate(&tupdate, update, 3, EDT_PARAM_UNK);
    ocrEdtTemplateCreate(&toutput, output, 0, EDT_PARAM_UNK);

    /* The output EDT takes the path and every final tile: (i,j) is final after step j+1. */
    u32 nfinal = (u32)(nt * (nt + 1) / 2);
    ocrGuid_t out;
    ocrEdtCreate(&out, toutput, 0, NULL, 1 + nfinal, NULL, EDT_PROP_NONE, NULL_HINT, NULL);
    const char* path = getArgv(depv[0].ptr, 4);
    ocrGuid_t pathdb;
    char* p;
    u64 len = 0;
    while (path[len] != '\0') ++len;
    ocrDbCreate(&pathdb, (void**)&p, len + 1, DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    for (u64 c = 0; c <= len; ++c) p[c] = path[c];
    ocrDbRelease(pathdb);
    ocrAddDependence(pathdb, out, 0, DB_MODE_RO);
    for (u64 i = 0; i < nt; ++i)
        for (u64 j = 0; j <= i; ++j)
            ocrAddDependence(version(j + 1, i, j), out, (u32)(1 + i * (i + 1) / 2 + j), DB_MODE_RO);

    for (u64 k = 0; k < nt; ++k) {
        u64 pk[1] = {k};
        ocrGuid_t d1[1] = {version(k, k, k)};
        edt(tpotrf, pk, 1, 1, d1);
        for (u64 i = k + 1; i < nt; ++i) {
            u64 pt[2] = {k, i};
            ocrGuid_t d2[2] = {version(k, i, k), version(k + 1, k, k)};
            edt(ttrsm, pt, 2, 2, d2);
        }
        for (u64 i = k + 1; i < nt; ++i)
            for (u64 j = k + 1; j <= i; ++j) {
                u64 pu[3] = {k, i, j};
                ocrGuid_t d3[3] = {version(k, i, j), version(k + 1, i, k), version(k + 1, j, k)};
                edt(tupdate, pu, 3, i == j ? 2 : 3, d3);
            }
    }

    /* Step 0: the input tiles. */
    for (u64 i = 0; i < nt; ++i)
        for (u64 j = 0; j <= i; ++j) {
            ocrGuid_t tile;
            double* data;
            ocrDbCreate(&tile, (void**)&data, t * t * sizeof(double), DB_PROP_NONE, NULL_HINT, NO_ALLOC);
            for (u64 r = 0; r < t; ++r)
                for (u64 c = 0; c < t; ++c) data[r * t + c] = a[(i * t + r) * n + j * t + c];
            publish(tile, 0, i, j);
        }
    free(a);
    ocrEdtTemplateDestroy(tpotrf);
    ocrEdtTemplateDestroy(ttrsm);
    ocrEdtTemplateDestroy(tupdate);
    ocrEdtTemplateDestroy(toutput);
    return NULL_GUID;
}
