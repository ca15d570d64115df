/* SPDX-License-Identifier: MIT */
/* A reduction tree as an OCR program.
 *
 *   reduction_tree <n> <arity> <expected-sum>
 *
 * n leaf EDTs each make a block holding its value i (1..n); combine EDTs of
 * up to <arity> inputs add their children's blocks level by level until one
 * block is left. ocrShutdown when it holds <expected-sum>, else ocrAbort(1). */
#include <stdlib.h>

#include "ocr.h"

static ocrGuid_t leaf(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t db;
    u64* v;
    ocrDbCreate(&db, (void**)&v, sizeof(u64), DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    *v = paramv[0];
    return db;
}

static ocrGuid_t combine(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t db;
    u64* v;
    ocrDbCreate(&db, (void**)&v, sizeof(u64), DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    *v = 0;
    for (u32 i = 0; i < depc; ++i) {
        *v += *(const u64*)depv[i].ptr;
        ocrDbDestroy(depv[i].guid);
    }
    return db;
}

static ocrGuid_t check(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    u64 sum = *(const u64*)depv[0].ptr;
    ocrPrintf("reduction tree: sum %llu (expected %llu)\n", (unsigned long long)sum, (unsigned long long)paramv[0]);
    if (sum == paramv[0]) {
        ocrShutdown();
    } else {
        ocrAbort(1);
    }
    return NULL_GUID;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    if (getArgc(depv[0].ptr) != 4) {
        ocrPrintf("usage: reduction_tree <n> <arity> <expected-sum>\n");
        ocrAbort(2);
        return NULL_GUID;
    }
    u64 n = strtoull(getArgv(depv[0].ptr, 1), NULL, 10);
    u64 arity = strtoull(getArgv(depv[0].ptr, 2), NULL, 10);
    u64 expected = strtoull(getArgv(depv[0].ptr, 3), NULL, 10);
    if (n == 0 || arity < 2 || arity > 64) {
        ocrPrintf("reduction_tree: n >= 1 and 2 <= arity <= 64\n");
        ocrAbort(2);
        return NULL_GUID;
    }
    ocrGuid_t tleaf, tcombine, tcheck, chk, gate;
    ocrEdtTemplateCreate(&tleaf, leaf, 1, 1);
    ocrEdtTemplateCreate(&tcombine, combine, 0, EDT_PARAM_UNK);
    ocrEdtTemplateCreate(&tcheck, check, 1, 1);
    /* Every EDT waits on `gate`, satisfied once the whole tree is connected:
     * an output event must be connected before its EDT can fire it. */
    ocrEventCreate(&gate, OCR_EVENT_STICKY_T, EVT_PROP_NONE);
    ocrGuid_t* level = malloc(n * sizeof(ocrGuid_t));
    for (u64 i = 0; i < n; ++i) {
        ocrGuid_t e;
        u64 value = i + 1;
        ocrEdtCreate(&e, tleaf, 1, &value, 1, &gate, EDT_PROP_NONE, NULL_HINT, &level[i]);
    }
    u64 width = n;
    while (width > 1) {
        u64 next = 0;
        for (u64 i = 0; i < width; i += arity) {
            u64 k = width - i < arity ? width - i : arity;
            ocrGuid_t e, out;
            ocrEdtCreate(&e, tcombine, 0, NULL, (u32)k, &level[i], EDT_PROP_NONE, NULL_HINT, &out);
            level[next++] = out; /* after the call: it reads level[i..i+k) */
        }
        width = next;
    }
    ocrEdtCreate(&chk, tcheck, 1, &expected, 1, &level[0], EDT_PROP_NONE, NULL_HINT, NULL);
    free(level);
    ocrEventSatisfy(gate, NULL_GUID);
    ocrEdtTemplateDestroy(tleaf);
    ocrEdtTemplateDestroy(tcombine);
    ocrEdtTemplateDestroy(tcheck);
    return NULL_GUID;
}
