/* SPDX-License-Identifier: MIT */
/* Smith-Waterman local alignment score as a wavefront of OCR tiles.
 *
 *   smith_waterman <a> <b> <tile> <expected-score>
 *
 * Scores: match +2, mismatch -1, gap -1 (linear). Tile (i,j) computes its
 * block of the H matrix from the bottom row of tile (i-1,j), the right column
 * of tile (i,j-1) and the corner of tile (i-1,j-1); it announces its block on
 * the labeled STICKY event of index i*nbj+j. A last EDT takes every tile's
 * best score. ocrShutdown when the best equals <expected-score>, else ocrAbort(1). */
#include <stdlib.h>
#include <string.h>

#include "extensions/ocr-labeling.h"
#include "ocr.h"

typedef struct {
    u64 la, lb, t, nbi, nbj;
    ocrGuid_t range;
    char a[1024], b[1024];
} input_t;

/* A tile's block: best score, then its t x t H values (row major). */
typedef struct {
    s64 best;
    s64 h[];
} tile_t;

static ocrGuid_t label(ocrGuid_t range, u64 nbj, u64 i, u64 j) {
    ocrGuid_t g;
    ocrGuidFromIndex(&g, range, i * nbj + j);
    return g;
}

static ocrGuid_t tile_event(const input_t* in, u64 i, u64 j) {
    return label(in->range, in->nbj, i, j);
}

static s64 max2(s64 x, s64 y) {
    return x > y ? x : y;
}

static ocrGuid_t tile(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    const input_t* in = (const input_t*)depv[0].ptr;
    const tile_t* up = (const tile_t*)depv[1].ptr;   /* NULL on the first tile row */
    const tile_t* left = (const tile_t*)depv[2].ptr; /* NULL on the first tile column */
    const tile_t* diag = (const tile_t*)depv[3].ptr;
    u64 bi = paramv[0], bj = paramv[1], t = in->t;
    ocrGuid_t out;
    tile_t* me;
    ocrDbCreate(&out, (void**)&me, sizeof(tile_t) + t * t * sizeof(s64), DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    me->best = 0;
    for (u64 r = 0; r < t; ++r) {
        for (u64 c = 0; c < t; ++c) {
            u64 gi = bi * t + r, gj = bj * t + c;
            s64 h_up, h_left, h_diag;
            h_up = r > 0 ? me->h[(r - 1) * t + c] : (up ? up->h[(t - 1) * t + c] : 0);
            h_left = c > 0 ? me->h[r * t + c - 1] : (left ? left->h[r * t + t - 1] : 0);
            if (r > 0 && c > 0)
                h_diag = me->h[(r - 1) * t + c - 1];
            else if (r > 0)
                h_diag = left ? left->h[(r - 1) * t + t - 1] : 0;
            else if (c > 0)
                h_diag = up ? up->h[(t - 1) * t + c - 1] : 0;
            else
                h_diag = diag ? diag->h[(t - 1) * t + t - 1] : 0;
            s64 h = 0;
            if (gi < in->la && gj < in->lb) {
                s64 s = in->a[gi] == in->b[gj] ? 2 : -1;
                h = max2(0, max2(h_diag + s, max2(h_up - 1, h_left - 1)));
            }
            me->h[r * t + c] = h;
            me->best = max2(me->best, h);
        }
    }
    ocrDbRelease(out);
    ocrEventSatisfy(tile_event(in, bi, bj), out);
    return NULL_GUID;
}

static ocrGuid_t best(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    s64 score = 0;
    for (u32 i = 0; i < depc; ++i) score = max2(score, ((const tile_t*)depv[i].ptr)->best);
    ocrPrintf("smith-waterman score %d (expected %d)\n", (int)score, (int)paramv[0]);
    if ((u64)score == paramv[0]) {
        ocrShutdown();
    } else {
        ocrAbort(1);
    }
    return NULL_GUID;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    if (getArgc(depv[0].ptr) != 5) {
        ocrPrintf("usage: smith_waterman <a> <b> <tile> <expected-score>\n");
        ocrAbort(2);
        return NULL_GUID;
    }
    ocrGuid_t indb;
    input_t* in;
    ocrDbCreate(&indb, (void**)&in, sizeof(input_t), DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    const char* a = getArgv(depv[0].ptr, 1);
    const char* b = getArgv(depv[0].ptr, 2);
    in->la = strlen(a);
    in->lb = strlen(b);
    in->t = strtoull(getArgv(depv[0].ptr, 3), NULL, 10);
    u64 expected = strtoull(getArgv(depv[0].ptr, 4), NULL, 10);
    if (in->la == 0 || in->lb == 0 || in->la >= sizeof(in->a) || in->lb >= sizeof(in->b) || in->t == 0) {
        ocrPrintf("smith_waterman: sequences of 1..1023 letters and a tile of at least 1\n");
        ocrAbort(2);
        return NULL_GUID;
    }
    memcpy(in->a, a, in->la + 1);
    memcpy(in->b, b, in->lb + 1);
    in->nbi = (in->la + in->t - 1) / in->t;
    in->nbj = (in->lb + in->t - 1) / in->t;
    ocrGuidRangeCreate(&in->range, in->nbi * in->nbj, GUID_USER_EVENT_STICKY);
    for (u64 i = 0; i < in->nbi; ++i)
        for (u64 j = 0; j < in->nbj; ++j) {
            ocrGuid_t e = tile_event(in, i, j);
            ocrEventCreate(&e, OCR_EVENT_STICKY_T, GUID_PROP_IS_LABELED | EVT_PROP_TAKES_ARG);
        }
    /* Everything the tiles read is written: release it before any tile can run. */
    u64 nbi = in->nbi, nbj = in->nbj;
    ocrGuid_t range = in->range;
    ocrDbRelease(indb);
    ocrGuid_t ttile, tbest, fin;
    ocrEdtTemplateCreate(&ttile, tile, 2, 4);
    ocrEdtTemplateCreate(&tbest, best, 1, EDT_PARAM_UNK);
    ocrEdtCreate(&fin, tbest, 1, &expected, (u32)(nbi * nbj), NULL, EDT_PROP_NONE, NULL_HINT, NULL);
    for (u64 i = 0; i < nbi; ++i)
        for (u64 j = 0; j < nbj; ++j) {
            ocrGuid_t e;
            u64 p[2] = {i, j};
            ocrEdtCreate(&e, ttile, 2, p, 4, NULL, EDT_PROP_NONE, NULL_HINT, NULL);
            ocrAddDependence(indb, e, 0, DB_MODE_RO);
            ocrAddDependence(i > 0 ? label(range, nbj, i - 1, j) : NULL_GUID, e, 1, DB_MODE_RO);
            ocrAddDependence(j > 0 ? label(range, nbj, i, j - 1) : NULL_GUID, e, 2, DB_MODE_RO);
            ocrAddDependence(i > 0 && j > 0 ? label(range, nbj, i - 1, j - 1) : NULL_GUID, e, 3, DB_MODE_RO);
            ocrAddDependence(label(range, nbj, i, j), fin, (u32)(i * nbj + j), DB_MODE_RO);
        }
    ocrEdtTemplateDestroy(ttile);
    ocrEdtTemplateDestroy(tbest);
    return NULL_GUID;
}
