/* SPDX-License-Identifier: MIT */
/* The event types' rules: STICKY refuses a second satisfaction and serves
 * late dependences; IDEM ignores a second one; ONCE is gone after it fired;
 * LATCH fires when its DECR count reaches its INCR count, with no block;
 * COUNTED is destroyed once fired and given its declared dependences. */
#include "extensions/ocr-labeling.h"
#include "ocr.h"

static ocrGuid_t check(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t db = {.guid = (intptr_t)paramv[0]};
    ocrAssert(ocrGuidIsEq(depv[0].guid, db)); /* STICKY, added after it fired */
    ocrAssert(ocrGuidIsEq(depv[1].guid, db)); /* IDEM: the first satisfaction's block */
    ocrAssert(ocrGuidIsNull(depv[2].guid));   /* LATCH carries no block */
    ocrAssert(ocrGuidIsEq(depv[3].guid, db)); /* COUNTED */
    ocrAssert(ocrGuidIsEq(depv[4].guid, db)); /* ONCE, dependence added before it fired */
    ocrShutdown();
    return NULL_GUID;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t db, other, sticky, idem, latch, counted, once, tpl, edt;
    void* p;
    ocrDbCreate(&db, &p, 8, DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    ocrDbRelease(db);
    ocrDbCreate(&other, &p, 8, DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    ocrDbRelease(other);
    ocrEventCreate(&sticky, OCR_EVENT_STICKY_T, EVT_PROP_TAKES_ARG);
    ocrEventCreate(&idem, OCR_EVENT_IDEM_T, EVT_PROP_TAKES_ARG);
    ocrEventCreate(&latch, OCR_EVENT_LATCH_T, EVT_PROP_NONE);
    ocrEventCreate(&once, OCR_EVENT_ONCE_T, EVT_PROP_TAKES_ARG);
    ocrEventParams_t params;
    params.EVENT_COUNTED.nbDeps = 1;
    ocrEventCreateParams(&counted, OCR_EVENT_COUNTED_T, EVT_PROP_TAKES_ARG, &params);

    ocrAssert(ocrEventSatisfy(sticky, db) == 0);
    ocrAssert(ocrEventSatisfy(sticky, other) != 0);
    ocrAssert(ocrEventSatisfy(idem, db) == 0);
    ocrAssert(ocrEventSatisfy(idem, other) == 0);
    ocrAssert(ocrEventSatisfySlot(latch, NULL_GUID, OCR_EVENT_LATCH_INCR_SLOT) == 0);
    ocrAssert(ocrEventSatisfySlot(latch, NULL_GUID, OCR_EVENT_LATCH_INCR_SLOT) == 0);
    ocrAssert(ocrEventSatisfySlot(latch, db, OCR_EVENT_LATCH_DECR_SLOT) == 0);
    ocrAssert(ocrEventSatisfy(counted, db) == 0);

    ocrEdtTemplateCreate(&tpl, check, 1, 5);
    u64 dbp = (u64)db.guid;
    ocrEdtCreate(&edt, tpl, 1, &dbp, 5, NULL, EDT_PROP_NONE, NULL_HINT, NULL);
    ocrAddDependence(sticky, edt, 0, DB_MODE_RO);
    ocrAddDependence(idem, edt, 1, DB_MODE_RO);
    ocrAddDependence(latch, edt, 2, DB_MODE_RO);
    ocrAddDependence(counted, edt, 3, DB_MODE_RO);
    ocrAddDependence(once, edt, 4, DB_MODE_RO);
    ocrGuidUserKind kind;
    ocrAssert(ocrGetGuidKind(&kind, counted) == 0 && kind == GUID_USER_NONE); /* fired, 1 of 1 dependences */
    ocrAssert(ocrGetGuidKind(&kind, latch) == 0 && kind == GUID_USER_EVENT_LATCH);
    ocrAssert(ocrEventSatisfySlot(latch, NULL_GUID, OCR_EVENT_LATCH_DECR_SLOT) == 0); /* 2 = 2: fires */
    ocrAssert(ocrGetGuidKind(&kind, latch) == 0 && kind == GUID_USER_NONE);
    ocrAssert(ocrEventSatisfy(once, db) == 0);
    ocrAssert(ocrGetGuidKind(&kind, once) == 0 && kind == GUID_USER_NONE);
    return NULL_GUID;
}
