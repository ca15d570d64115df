/* SPDX-License-Identifier: MIT */
/* A reduction over all ranks: the sum of i² for i = 1..n by a tree of EDTs spread over the
 * ranks by affinity.
 *
 *   reduction <n> <arity>
 *
 * Leaf i runs on rank i mod ranks and makes a block holding i² there; combine EDTs of up to
 * <arity> inputs, the j-th of each level on rank j mod ranks, add their children's blocks
 * (copies from the children's ranks) and destroy them (on their ranks) until one is left. The
 * check EDT on rank 0 compares it with a serial loop and with n(n+1)(2n+1)/6: ocrShutdown when
 * all three agree, else ocrAbort(1). A leaf or combine EDT on another rank than its hint named
 * aborts with 3. */
#include <stdlib.h>

#include "dist_test.h"

static ocrGuid_t leaf(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    CHECK(current_rank() == paramv[1], "leaf %llu runs on rank %llu, not %llu", (unsigned long long)paramv[0],
          (unsigned long long)current_rank(), (unsigned long long)paramv[1]);
    ocrGuid_t db;
    u64* v;
    ocrDbCreate(&db, (void**)&v, sizeof(u64), DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    *v = paramv[0] * paramv[0];
    return db;
}

static ocrGuid_t combine(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    CHECK(current_rank() == paramv[0], "a combine EDT runs on rank %llu, not %llu", (unsigned long long)current_rank(),
          (unsigned long long)paramv[0]);
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
    const u64 sum = *(const u64*)depv[0].ptr, serial = paramv[0], n = paramv[1];
    const u64 closed = n * (n + 1) * (2 * n + 1) / 6;
    ocrPrintf("reduction over %llu rank(s): %llu (serial loop %llu, closed form %llu)\n",
              (unsigned long long)rank_count(), (unsigned long long)sum, (unsigned long long)serial,
              (unsigned long long)closed);
    ocrDbDestroy(depv[0].guid);
    if (sum == serial && sum == closed) {
        ocrShutdown();
    } else {
        ocrAbort(1);
    }
    return NULL_GUID;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    if (getArgc(depv[0].ptr) != 3) {
        ocrPrintf("usage: reduction <n> <arity>\n");
        ocrAbort(2);
        return NULL_GUID;
    }
    const u64 n = strtoull(getArgv(depv[0].ptr, 1), NULL, 10);
    const u64 arity = strtoull(getArgv(depv[0].ptr, 2), NULL, 10);
    if (n == 0 || n > 1000000 || arity < 2 || arity > 64) {
        ocrPrintf("reduction: 1 <= n <= 1000000 and 2 <= arity <= 64\n");
        ocrAbort(2);
        return NULL_GUID;
    }
    u64 serial[2] = {0, n};
    for (u64 i = 1; i <= n; ++i) serial[0] += i * i;
    ocrGuid_t tleaf, tcombine, tcheck, chk, gate;
    ocrEdtTemplateCreate(&tleaf, leaf, 2, 1);
    ocrEdtTemplateCreate(&tcombine, combine, 1, EDT_PARAM_UNK);
    ocrEdtTemplateCreate(&tcheck, check, 2, 1);
    /* Every EDT waits on `gate`, satisfied once the whole tree is connected:
     * an output event must be connected before its EDT can fire it. */
    ocrEventCreate(&gate, OCR_EVENT_STICKY_T, EVT_PROP_NONE);
    ocrGuid_t* level = malloc(n * sizeof(ocrGuid_t));
    for (u64 i = 0; i < n; ++i) {
        ocrHint_t hint;
        ocrGuid_t e;
        u64 params[2] = {i + 1, i % rank_count()};
        ocrEdtCreate(&e, tleaf, 2, params, 1, &gate, EDT_PROP_NONE, on_rank(&hint, i, 1), &level[i]);
    }
    u64 width = n;
    while (width > 1) {
        u64 next = 0;
        for (u64 i = 0; i < width; i += arity) {
            const u64 k = width - i < arity ? width - i : arity;
            ocrHint_t hint;
            ocrGuid_t e, out;
            u64 where = next % rank_count();
            ocrEdtCreate(&e, tcombine, 1, &where, (u32)k, &level[i], EDT_PROP_NONE, on_rank(&hint, where, 1), &out);
            level[next++] = out; /* after the call: it reads level[i..i+k) */
        }
        width = next;
    }
    ocrEdtCreate(&chk, tcheck, 2, serial, 1, &level[0], EDT_PROP_NONE, NULL_HINT, NULL);
    free(level);
    ocrEventSatisfy(gate, NULL_GUID);
    return NULL_GUID;
}
