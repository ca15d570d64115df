/* SPDX-License-Identifier: MIT */
/* A hint holding anything but an affinity of the job, and an affinity index
 * past the last rank, are refused with OCR_EINVAL (and a warning naming the
 * value); nothing is created. */
#include "dist_test.h"

static ocrGuid_t never(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrPrintf("FAILED: an EDT with a bad affinity hint ran\n");
    ocrAbort(3);
    return NULL_GUID;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t affinity, tpl, edt = NULL_GUID, db = NULL_GUID;
    void* data = NULL;
    CHECK(ocrAffinityGetAt(AFFINITY_PD, rank_count(), &affinity) == OCR_EINVAL, "index %llu accepted",
          (unsigned long long)rank_count());
    ocrHint_t edt_hint, db_hint;
    ocrHintInit(&edt_hint, OCR_HINT_EDT_T);
    ocrSetHintValue(&edt_hint, OCR_HINT_EDT_AFFINITY, 12345);
    ocrHintInit(&db_hint, OCR_HINT_DB_T);
    ocrAffinityGetAt(AFFINITY_PD, 0, &affinity);
    /* An affinity of rank 4096: a GUID of the right kind, of a rank the job does not have. */
    ocrSetHintValue(&db_hint, OCR_HINT_DB_AFFINITY, ocrAffinityToHintValue(affinity) | ((u64)4095 << 51));
    ocrEdtTemplateCreate(&tpl, never, 0, 0);
    u8 rc = ocrEdtCreate(&edt, tpl, 0, NULL, 0, NULL, EDT_PROP_NONE, &edt_hint, NULL);
    CHECK(rc == OCR_EINVAL && ocrGuidIsNull(edt), "ocrEdtCreate with a bad affinity gave %u", rc);
    rc = ocrDbCreate(&db, &data, 64, DB_PROP_NONE, &db_hint, NO_ALLOC);
    CHECK(rc == OCR_EINVAL && ocrGuidIsNull(db) && data == NULL, "ocrDbCreate with a bad affinity gave %u", rc);
    ocrPrintf("bad affinities refused with OCR_EINVAL\n");
    ocrShutdown();
    return NULL_GUID;
}
