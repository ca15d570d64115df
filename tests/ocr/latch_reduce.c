/* SPDX-License-Identifier: MIT */
/* A reduction guarded by EW: N EDTs each add their index to one data block
 * held in EW mode, then count down a LATCH; when the latch fires, a checker
 * compares the sum with N(N-1)/2. Lost updates would show as a wrong sum.
 *
 *   ./latch_reduce [N=500]  */
#include <stdlib.h>
#include <string.h>

#include "ocr.h"

static ocrGuid_t addEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    (void)paramc;
    (void)depc;
    volatile u64* sum = (volatile u64*)depv[0].ptr;
    const u64 before = *sum;
    for (volatile int spin = 0; spin < 2000; ++spin) {
    }
    *sum = before + paramv[0];
    ocrGuid_t latch;
    memcpy(&latch, &paramv[1], sizeof latch);
    ocrDbRelease(depv[0].guid);
    ocrEventSatisfySlot(latch, NULL_GUID, OCR_EVENT_LATCH_DECR_SLOT);
    return NULL_GUID;
}

static ocrGuid_t checkEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    (void)paramc;
    (void)depc;
    const u64 n = paramv[0];
    const u64 sum = *(const u64*)depv[1].ptr;
    ocrPrintf("latch_reduce: %llu EDTs in EW mode summed to %llu (expected %llu)\n", (unsigned long long)n,
              (unsigned long long)sum, (unsigned long long)(n * (n - 1) / 2));
    if (sum != n * (n - 1) / 2) {
        ocrAbort(3);
    } else {
        ocrShutdown();
    }
    return NULL_GUID;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    (void)paramc;
    (void)paramv;
    (void)depc;
    const u64 n = ocrGetArgc(depv[0].ptr) > 1 ? strtoull(ocrGetArgv(depv[0].ptr, 1), NULL, 10) : 500;
    ocrGuid_t sum_db, latch, add_template, check_template, edt;
    u64* sum;
    ocrDbCreate(&sum_db, (void**)&sum, sizeof(u64), DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    *sum = 0;
    ocrDbRelease(sum_db);

    ocrEventCreate(&latch, OCR_EVENT_LATCH_T, EVT_PROP_NONE);
    for (u64 i = 0; i < n; ++i) {
        ocrEventSatisfySlot(latch, NULL_GUID, OCR_EVENT_LATCH_INCR_SLOT);
    }
    ocrEdtTemplateCreate(&check_template, checkEdt, 1, 2);
    u64 check_params[1] = {n};
    ocrEdtCreate(&edt, check_template, EDT_PARAM_DEF, check_params, EDT_PARAM_DEF, NULL, EDT_PROP_NONE, NULL_HINT,
                 NULL);
    ocrAddDependence(latch, edt, 0, DB_MODE_NULL);
    ocrAddDependence(sum_db, edt, 1, DB_MODE_CONST);

    ocrEdtTemplateCreate(&add_template, addEdt, 2, 1);
    for (u64 i = 0; i < n; ++i) {
        u64 params[2] = {i, 0};
        memcpy(&params[1], &latch, sizeof latch);
        ocrEdtCreate(&edt, add_template, EDT_PARAM_DEF, params, EDT_PARAM_DEF, NULL, EDT_PROP_NONE, NULL_HINT, NULL);
        ocrAddDependence(sum_db, edt, 0, DB_MODE_EW);
    }
    return NULL_GUID;
}
