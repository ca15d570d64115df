/* SPDX-License-Identifier: MIT */
/* A dependence added with DB_MODE_NULL is a control dependence: the EDT sees
 * NULL_GUID and a NULL pointer on that slot, from a data block directly or
 * through an event, while the other slots still get their blocks. */
#include "ocr.h"

static ocrGuid_t edt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrAssert(ocrGuidIsNull(depv[0].guid) && depv[0].ptr == NULL);
    ocrAssert(ocrGuidIsNull(depv[1].guid) && depv[1].ptr == NULL);
    ocrAssert(!ocrGuidIsNull(depv[2].guid) && depv[2].ptr != NULL && *(u32*)depv[2].ptr == 31);
    ocrShutdown();
    return NULL_GUID;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t db, evt, tpl, e;
    u32* data;
    ocrDbCreate(&db, (void**)&data, sizeof(u32), DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    *data = 31;
    ocrDbRelease(db);
    ocrEventCreate(&evt, OCR_EVENT_STICKY_T, EVT_PROP_TAKES_ARG);
    ocrEdtTemplateCreate(&tpl, edt, 0, 3);
    ocrEdtCreate(&e, tpl, 0, NULL, 3, NULL, EDT_PROP_NONE, NULL_HINT, NULL);
    ocrAddDependence(db, e, 0, DB_MODE_NULL);
    ocrAddDependence(evt, e, 1, DB_MODE_NULL);
    ocrAddDependence(db, e, 2, DB_MODE_RO);
    ocrEventSatisfy(evt, db);
    return NULL_GUID;
}
