/* SPDX-License-Identifier: MIT */
/* Remote EDT creation + satisfaction round trip (bench/ocr-dist/run, "roundtrip").
 *
 *   strata ocr -n 2 ocr_dist_bench_roundtrip <iterations> <bytes>
 *
 * An EDT on rank 0 creates an EDT on rank 1 whose parameters carry <bytes> (rounded up to
 * whole u64) and one dependence, then satisfies that dependence; the EDT on rank 1 does the
 * same towards rank 0. One iteration is one such round trip; the first tenth are warm-up.
 * Prints "roundtrip_us <mean µs per round trip>" and shuts down. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "extensions/ocr-affinity.h"
#include "ocr.h"

enum { P_ITER, P_TOTAL, P_WARM, P_T0, P_TPL, P_PAYLOAD };

static u64 now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (u64)ts.tv_sec * 1000000000ull + (u64)ts.tv_nsec;
}

/* Creates the next hop on `rank` with these parameters and satisfies its one slot. */
static void hop(u64* params, u32 paramc, u64 rank) {
    ocrGuid_t affinity, edt, tpl = {.guid = params[P_TPL]};
    ocrHint_t hint;
    ocrAffinityGetAt(AFFINITY_PD, rank, &affinity);
    ocrHintInit(&hint, OCR_HINT_EDT_T);
    ocrSetHintValue(&hint, OCR_HINT_EDT_AFFINITY, ocrAffinityToHintValue(affinity));
    ocrEdtCreate(&edt, tpl, paramc, params, 1, NULL, EDT_PROP_NONE, &hint, NULL);
    ocrAddDependence(NULL_GUID, edt, 0, DB_MODE_NULL);
}

static ocrGuid_t step(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t here;
    ocrAffinityGetCurrent(&here);
    ocrGuid_t zero;
    ocrAffinityGetAt(AFFINITY_PD, 0, &zero);
    const int on_zero = ocrAffinityToHintValue(here) == ocrAffinityToHintValue(zero);
    if (on_zero) {
        if (paramv[P_ITER] == paramv[P_WARM]) paramv[P_T0] = now_ns();
        if (paramv[P_ITER] == paramv[P_TOTAL]) {
            const double us = (double)(now_ns() - paramv[P_T0]) / 1e3 / (double)(paramv[P_TOTAL] - paramv[P_WARM]);
            ocrPrintf("roundtrip_us %.3f\n", us);
            ocrShutdown();
            return NULL_GUID;
        }
        paramv[P_ITER] += 1;
    }
    hop(paramv, paramc, on_zero ? 1 : 0);
    return NULL_GUID;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    u64 ranks = 0;
    ocrAffinityCount(AFFINITY_PD, &ranks);
    if (getArgc(depv[0].ptr) != 3 || ranks < 2) {
        ocrPrintf("usage: strata ocr -n 2 ocr_dist_bench_roundtrip <iterations> <bytes> (%llu rank(s))\n",
                  (unsigned long long)ranks);
        ocrAbort(2);
        return NULL_GUID;
    }
    const u64 iterations = strtoull(getArgv(depv[0].ptr, 1), NULL, 10);
    const u64 words = (strtoull(getArgv(depv[0].ptr, 2), NULL, 10) + 7) / 8;
    const u32 count = (u32)(P_PAYLOAD + words);
    u64* params = calloc(count, sizeof(u64));
    ocrGuid_t tpl;
    ocrEdtTemplateCreate(&tpl, step, EDT_PARAM_UNK, 1);
    params[P_TOTAL] = iterations + iterations / 10;
    params[P_WARM] = iterations / 10;
    params[P_TPL] = (u64)tpl.guid;
    for (u64 w = 0; w < words; ++w) params[P_PAYLOAD + w] = w;
    hop(params, count, 1);
    free(params);
    return NULL_GUID;
}
