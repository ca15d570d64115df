/* SPDX-License-Identifier: MIT */
/* The runtime interface: each EDT has its own local storage (ELS) that starts
 * empty; worker GUIDs are non-null inside EDTs; ocrInformLegacyCodeBlocking
 * succeeds inside an EDT (and the blocked EDT's core keeps running others). */
#include <unistd.h>

#include "extensions/ocr-runtime-itf.h"
#include "ocr.h"

#define CHILDREN 8

static ocrGuid_t child(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    for (u8 i = 0; i < OCR_ELS_USER_SLOTS; ++i) ocrAssert(ocrGuidIsNull(ocrElsUserGet(i)));
    ocrGuid_t mine = {.guid = (intptr_t)(paramv[0] + 1)};
    ocrElsUserSet(3, mine);
    ocrAssert(ocrGuidIsEq(ocrElsUserGet(3), mine));
    ocrGuid_t worker, self;
    ocrCurrentWorkerGuid(&worker);
    currentEdtUserGet(&self);
    ocrAssert(!ocrGuidIsNull(worker) && !ocrGuidIsNull(self));
    if (paramv[0] == 0) {
        ocrAssert(ocrInformLegacyCodeBlocking() == 0);
        usleep(20000); /* legacy code that blocks */
    }
    return NULL_GUID;
}

static ocrGuid_t done(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrShutdown();
    return NULL_GUID;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrAssert(ocrNbWorkers() >= 1);
    ocrElsUserSet(0, NULL_GUID);
    ocrGuid_t tpl, dtpl, fin, out, d;
    ocrEdtTemplateCreate(&tpl, child, 1, 0);
    ocrEdtTemplateCreate(&dtpl, done, 0, 1);
    /* A finish EDT would need a body; a latch counts the children instead. */
    ocrEventParams_t params;
    params.EVENT_LATCH.counter = CHILDREN;
    ocrEventCreateParams(&fin, OCR_EVENT_LATCH_T, EVT_PROP_NONE, &params);
    ocrEdtCreate(&d, dtpl, 0, NULL, 1, &fin, EDT_PROP_NONE, NULL_HINT, NULL);
    for (u64 i = 0; i < CHILDREN; ++i) {
        ocrGuid_t edt;
        ocrEdtCreate(&edt, tpl, 1, &i, 0, NULL, EDT_PROP_NONE, NULL_HINT, &out);
        ocrAddDependence(out, fin, OCR_EVENT_LATCH_DECR_SLOT, DB_MODE_NULL);
    }
    return NULL_GUID;
}
