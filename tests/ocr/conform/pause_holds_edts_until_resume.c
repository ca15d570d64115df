/* SPDX-License-Identifier: MIT */
/* ocrPause: the first call pauses (1), a second one reports it was paused (0);
 * while paused ocrQuery lists the EDTs that wait and EDTs made runnable do not
 * start; after ocrResume they run. */
#include "extensions/ocr-pause.h"
#include "ocr.h"

static int resumed; /* set by mainEdt right before ocrResume (a test probe, not OCR style) */

static ocrGuid_t late(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrAssert(__atomic_load_n(&resumed, __ATOMIC_ACQUIRE) == 1);
    ocrShutdown();
    return NULL_GUID;
}

static ocrGuid_t never(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrAbort(8);
    return NULL_GUID;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    void* result = NULL;
    u32 size = 0;
    ocrAssert(ocrGuidIsNull(ocrQuery(OCR_QUERY_ALL_EDTS, NULL_GUID, &result, &size, 0)));
    ocrGuid_t tpl, ntpl, waiting, runnable;
    ocrEdtTemplateCreate(&ntpl, never, 0, 1);
    ocrEdtCreate(&waiting, ntpl, 0, NULL, 1, NULL, EDT_PROP_NONE, NULL_HINT, NULL);
    ocrAssert(ocrPause(true) == 1);
    ocrAssert(ocrPause(false) == 0);
    ocrGuid_t db = ocrQuery(OCR_QUERY_ALL_EDTS, NULL_GUID, &result, &size, 0);
    ocrAssert(!ocrGuidIsNull(db) && size == sizeof(ocrGuid_t) && ocrGuidIsEq(((ocrGuid_t*)result)[0], waiting));
    ocrDbDestroy(db);
    ocrEdtTemplateCreate(&tpl, late, 0, 0);
    ocrEdtCreate(&runnable, tpl, 0, NULL, 0, NULL, EDT_PROP_NONE, NULL_HINT, NULL);
    for (volatile int spin = 0; spin < 5000000; ++spin) {
    } /* time for a worker to pick the runnable EDT up, were it allowed to start */
    __atomic_store_n(&resumed, 1, __ATOMIC_RELEASE);
    ocrResume(0);
    return NULL_GUID;
}
