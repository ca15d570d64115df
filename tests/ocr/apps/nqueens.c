/* SPDX-License-Identifier: MIT */
/* N-Queens solution counts as an OCR program.
 *
 *   nqueens <n> <expected> [spawn-depth]
 *
 * Each EDT places a queen in one row: below the spawn depth it creates one
 * child per safe column and a sum EDT that depends on the children's output
 * events (each carries a block with a count), and returns the sum EDT's
 * output event, so its own output event fires with the sum (an EDT returning
 * an event). At the spawn depth it counts serially. The program checks the
 * total against <expected>: ocrShutdown on a match, ocrAbort(1) otherwise. */
#include <stdlib.h>

#include "ocr.h"

static u64 N, DEPTH;

/* paramv: row, then the columns of the queens of rows 0..row-1 */
static int safe(const u64* cols, u64 row, u64 col) {
    for (u64 r = 0; r < row; ++r) {
        u64 c = cols[r];
        if (c == col || c + (row - r) == col || col + (row - r) == c) return 0;
    }
    return 1;
}

static u64 count_serial(u64* cols, u64 row) {
    if (row == N) return 1;
    u64 total = 0;
    for (u64 col = 0; col < N; ++col) {
        if (safe(cols, row, col)) {
            cols[row] = col;
            total += count_serial(cols, row + 1);
        }
    }
    return total;
}

static ocrGuid_t result_block(u64 value) {
    ocrGuid_t db;
    u64* p;
    ocrDbCreate(&db, (void**)&p, sizeof(u64), DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    *p = value;
    return db;
}

static ocrGuid_t sum(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    u64 total = 0;
    for (u32 i = 0; i < depc; ++i) {
        total += *(u64*)depv[i].ptr;
        ocrDbDestroy(depv[i].guid);
    }
    return result_block(total);
}

static ocrGuid_t place(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    u64 row = paramv[0];
    u64 cols[64];
    for (u64 r = 0; r < row; ++r) cols[r] = paramv[1 + r];
    if (row >= DEPTH || row == N) return result_block(count_serial(cols, row));

    u64 child_params[65];
    ocrGuid_t outs[64];
    u32 children = 0;
    ocrGuid_t kids[64];
    ocrGuid_t tpl, stpl, sum_edt, sum_out;
    ocrEdtTemplateCreate(&tpl, place, EDT_PARAM_UNK, 1);
    for (u64 col = 0; col < N; ++col) {
        if (!safe(cols, row, col)) continue;
        child_params[0] = row + 1;
        for (u64 r = 0; r < row; ++r) child_params[1 + r] = cols[r];
        child_params[1 + row] = col;
        ocrEdtCreate(&kids[children], tpl, (u32)(row + 2), child_params, 1, NULL, EDT_PROP_NONE, NULL_HINT,
                     &outs[children]);
        ++children;
    }
    ocrEdtTemplateDestroy(tpl);
    if (children == 0) return result_block(0);
    ocrEdtTemplateCreate(&stpl, sum, 0, EDT_PARAM_UNK);
    ocrEventCreate(&sum_out, OCR_EVENT_STICKY_T, EVT_PROP_TAKES_ARG);
    ocrEdtCreate(&sum_edt, stpl, 0, NULL, children, outs, EDT_PROP_OEVT_VALID, NULL_HINT, &sum_out);
    ocrEdtTemplateDestroy(stpl);
    for (u32 i = 0; i < children; ++i) ocrAddDependence(NULL_GUID, kids[i], 0, DB_MODE_NULL);
    return sum_out; /* our output event fires when the sum's does */
}

static ocrGuid_t check(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    u64 got = *(u64*)depv[0].ptr;
    ocrPrintf("nqueens(%d) = %d (expected %d)\n", (int)N, (int)got, (int)paramv[0]);
    if (got == paramv[0]) {
        ocrShutdown();
    } else {
        ocrAbort(1);
    }
    return NULL_GUID;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    u64 argc = getArgc(depv[0].ptr);
    if (argc < 3) {
        ocrPrintf("usage: nqueens <n> <expected> [spawn-depth]\n");
        ocrAbort(2);
        return NULL_GUID;
    }
    N = strtoull(getArgv(depv[0].ptr, 1), NULL, 10);
    u64 expected = strtoull(getArgv(depv[0].ptr, 2), NULL, 10);
    DEPTH = argc > 3 ? strtoull(getArgv(depv[0].ptr, 3), NULL, 10) : 3;
    if (N == 0 || N > 20) {
        ocrPrintf("nqueens: n=%d: expected 1..20\n", (int)N);
        ocrAbort(2);
        return NULL_GUID;
    }
    ocrGuid_t tpl, ctpl, root, out, chk;
    u64 root_params[1] = {0};
    ocrEdtTemplateCreate(&tpl, place, EDT_PARAM_UNK, 1);
    ocrEdtTemplateCreate(&ctpl, check, 1, 1);
    ocrEdtCreate(&chk, ctpl, 1, &expected, 1, NULL, EDT_PROP_NONE, NULL_HINT, NULL);
    ocrEdtCreate(&root, tpl, 1, root_params, 1, NULL, EDT_PROP_NONE, NULL_HINT, &out);
    ocrAddDependence(out, chk, 0, DB_MODE_RO);
    ocrAddDependence(NULL_GUID, root, 0, DB_MODE_NULL);
    return NULL_GUID;
}
