/* SPDX-License-Identifier: MIT */
/* An EDT of the last rank satisfies an event rank 0 destroyed: rank 0 reports
 * OCR_EINVAL naming the event, its rank and the call site, and every rank
 * ends with exit code 1. Run on 2 and 4 ranks (one rank returns the code). */
#include "dist_test.h"

static ocrGuid_t late(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t event = {.guid = (intptr_t)paramv[0]};
    ocrEventSatisfy(event, NULL_GUID);
    return NULL_GUID;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t event, tpl, edt;
    ocrHint_t hint;
    ocrEventCreate(&event, OCR_EVENT_STICKY_T, EVT_PROP_NONE);
    ocrPrintf("event " GUIDF " destroyed\n", GUIDA(event));
    ocrEventDestroy(event);
    u64 param = (u64)event.guid;
    ocrEdtTemplateCreate(&tpl, late, 1, 0);
    ocrEdtCreate(&edt, tpl, 1, &param, 0, NULL, EDT_PROP_NONE, on_rank(&hint, rank_count() - 1, 1), NULL);
    return NULL_GUID;
}
