/* SPDX-License-Identifier: MIT */
/* An EDT that returns an event GUID: its output event fires when that event
 * does, carrying that event's data block (not the event's GUID as a block). */
#include "ocr.h"

static ocrGuid_t producer(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t evt = {.guid = (intptr_t)paramv[0]};
    return evt; /* not satisfied yet: mainEdt satisfies it later */
}

static ocrGuid_t consumer(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t db = {.guid = (intptr_t)paramv[0]};
    ocrAssert(ocrGuidIsEq(depv[0].guid, db));
    ocrAssert(depv[0].ptr != NULL && *(u64*)depv[0].ptr == 4242);
    ocrShutdown();
    return NULL_GUID;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t evt, db, out, ptpl, ctpl, p, c;
    u64* data;
    ocrEventCreate(&evt, OCR_EVENT_STICKY_T, EVT_PROP_TAKES_ARG);
    ocrDbCreate(&db, (void**)&data, sizeof(u64), DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    *data = 4242;
    ocrDbRelease(db);
    ocrEdtTemplateCreate(&ptpl, producer, 1, 1);
    ocrEdtTemplateCreate(&ctpl, consumer, 1, 1);
    u64 pp = (u64)evt.guid, cp = (u64)db.guid;
    ocrGuid_t gate;
    ocrEventCreate(&gate, OCR_EVENT_ONCE_T, EVT_PROP_NONE);
    ocrEdtCreate(&p, ptpl, 1, &pp, 1, NULL, EDT_PROP_NONE, NULL_HINT, &out);
    ocrEdtCreate(&c, ctpl, 1, &cp, 1, NULL, EDT_PROP_NONE, NULL_HINT, NULL);
    ocrAddDependence(out, c, 0, DB_MODE_RO);
    ocrAddDependence(gate, p, 0, DB_MODE_NULL);
    ocrEventSatisfy(gate, NULL_GUID);
    ocrEventSatisfy(evt, db);
    return NULL_GUID;
}
