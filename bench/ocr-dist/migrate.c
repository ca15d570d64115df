/* SPDX-License-Identifier: MIT */
/* Data block migration bandwidth (bench/ocr-dist/run, "migration").
 *
 *   strata ocr -n 2 ocr_dist_bench_migrate <iterations> <bytes>
 *
 * A block of <bytes> lives on rank 0. Each iteration an EDT on rank 0 writes it (DB_MODE_RW,
 * a new version) and an EDT on rank 1 reads it (DB_MODE_RO): the reader's copy is stale, so
 * the block's bytes move from rank 0 to rank 1 once per iteration. The first tenth are
 * warm-up. Prints "migration_mbps <MB/s of block bytes moved>" (MB = 10^6 bytes); ocrAbort(1)
 * if the reader sees another version than the writer wrote. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "extensions/ocr-affinity.h"
#include "ocr.h"

enum { P_ITER, P_TOTAL, P_WARM, P_T0, P_BYTES, P_WRITE, P_READ, P_COUNT };

static u64 now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (u64)ts.tv_sec * 1000000000ull + (u64)ts.tv_nsec;
}

static void next(u64* params, int write, ocrGuid_t db) {
    ocrGuid_t affinity, edt, tpl = {.guid = params[write ? P_WRITE : P_READ]};
    ocrHint_t hint;
    ocrAffinityGetAt(AFFINITY_PD, write ? 0 : 1, &affinity);
    ocrHintInit(&hint, OCR_HINT_EDT_T);
    ocrSetHintValue(&hint, OCR_HINT_EDT_AFFINITY, ocrAffinityToHintValue(affinity));
    ocrEdtCreate(&edt, tpl, P_COUNT, params, 1, NULL, EDT_PROP_NONE, &hint, NULL);
    ocrAddDependence(db, edt, 0, write ? DB_MODE_RW : DB_MODE_RO);
}

static ocrGuid_t writer(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    u64* data = depv[0].ptr;
    if (paramv[P_ITER] == paramv[P_WARM]) paramv[P_T0] = now_ns();
    if (paramv[P_ITER] == paramv[P_TOTAL]) {
        const double seconds = (double)(now_ns() - paramv[P_T0]) / 1e9;
        const double moved = (double)paramv[P_BYTES] * (double)(paramv[P_TOTAL] - paramv[P_WARM]);
        ocrPrintf("migration_mbps %.1f\n", moved / seconds / 1e6);
        ocrDbDestroy(depv[0].guid);
        ocrShutdown();
        return NULL_GUID;
    }
    paramv[P_ITER] += 1;
    data[0] = paramv[P_ITER];
    data[paramv[P_BYTES] / 8 - 1] = paramv[P_ITER];
    ocrDbRelease(depv[0].guid);
    next(paramv, 0, depv[0].guid);
    return NULL_GUID;
}

static ocrGuid_t reader(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    const u64* data = depv[0].ptr;
    if (data[0] != paramv[P_ITER] || data[paramv[P_BYTES] / 8 - 1] != paramv[P_ITER]) {
        ocrPrintf("migrate: iteration %llu read version %llu/%llu\n", (unsigned long long)paramv[P_ITER],
                  (unsigned long long)data[0], (unsigned long long)data[paramv[P_BYTES] / 8 - 1]);
        ocrAbort(1);
        return NULL_GUID;
    }
    next(paramv, 1, depv[0].guid);
    return NULL_GUID;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    u64 ranks = 0;
    ocrAffinityCount(AFFINITY_PD, &ranks);
    if (getArgc(depv[0].ptr) != 3 || ranks < 2) {
        ocrPrintf("usage: strata ocr -n 2 ocr_dist_bench_migrate <iterations> <bytes> (%llu rank(s))\n",
                  (unsigned long long)ranks);
        ocrAbort(2);
        return NULL_GUID;
    }
    const u64 iterations = strtoull(getArgv(depv[0].ptr, 1), NULL, 10);
    u64 params[P_COUNT] = {0};
    params[P_BYTES] = (strtoull(getArgv(depv[0].ptr, 2), NULL, 10) + 7) / 8 * 8;
    params[P_TOTAL] = iterations + iterations / 10;
    params[P_WARM] = iterations / 10;
    ocrGuid_t w, r, db;
    ocrEdtTemplateCreate(&w, writer, P_COUNT, 1);
    ocrEdtTemplateCreate(&r, reader, P_COUNT, 1);
    params[P_WRITE] = (u64)w.guid;
    params[P_READ] = (u64)r.guid;
    void* data;
    ocrDbCreate(&db, &data, params[P_BYTES], DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    memset(data, 0, params[P_BYTES]);
    ocrDbRelease(db);
    next(params, 1, db);
    return NULL_GUID;
}
