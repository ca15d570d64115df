/* SPDX-License-Identifier: MIT */
/* ocrShutdown called by an EDT of the last rank ends every rank with exit
 * code 0; an EDT left waiting on rank 0 never runs. */
#include "dist_test.h"

static ocrGuid_t never(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrPrintf("FAILED: an EDT whose dependence nothing satisfies ran\n");
    ocrAbort(3);
    return NULL_GUID;
}

static ocrGuid_t stop(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    CHECK(current_rank() == rank_count() - 1, "stop runs on rank %llu", (unsigned long long)current_rank());
    ocrPrintf("rank %llu shuts the job down\n", (unsigned long long)current_rank());
    ocrShutdown();
    return NULL_GUID;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t never_tpl, stop_tpl, waiting, edt;
    ocrHint_t hint;
    ocrEdtTemplateCreate(&never_tpl, never, 0, 1);
    ocrEdtTemplateCreate(&stop_tpl, stop, 0, 0);
    ocrEdtCreate(&waiting, never_tpl, 0, NULL, 1, NULL, EDT_PROP_NONE, NULL_HINT, NULL);
    ocrEdtCreate(&edt, stop_tpl, 0, NULL, 0, NULL, EDT_PROP_NONE, on_rank(&hint, rank_count() - 1, 1), NULL);
    return NULL_GUID;
}
