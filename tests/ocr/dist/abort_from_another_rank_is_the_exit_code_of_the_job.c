/* SPDX-License-Identifier: MIT */
/* ocrAbort(42) called by an EDT of the last rank ends every rank, and the
 * job (mpiexec) exits with 42. */
#include "dist_test.h"

static ocrGuid_t stop(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrAbort(42);
    return NULL_GUID;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t stop_tpl, edt;
    ocrHint_t hint;
    ocrEdtTemplateCreate(&stop_tpl, stop, 0, 0);
    ocrEdtCreate(&edt, stop_tpl, 0, NULL, 0, NULL, EDT_PROP_NONE, on_rank(&hint, rank_count() - 1, 1), NULL);
    return NULL_GUID;
}
