/* SPDX-License-Identifier: MIT */
/* ocrEdtCreate that fails on a dependence creates nothing: the EDT is not
 * counted in its finish scope nor among the EDTs that wait, so the scope
 * completes and the program ends normally (exit 0). Refused dependences: a
 * destroyed event in the only slot, a live unsatisfied event beside a
 * destroyed one (satisfying the live event later must not run the EDT), and
 * a CHANNEL event that already holds maxGen dependences. Before the fix the
 * program ended with "no EDT can run ... EDTs wait" and exit status 1. */
#include "ocr.h"

static ocrGuid_t never(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrAbort(7); /* none of the refused EDTs may run */
    return NULL_GUID;
}

static ocrGuid_t sink(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    return NULL_GUID;
}

static ocrGuid_t scope(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t tpl1, tpl2, sink_tpl, dead, live, channel, edt, out, waiting;
    ocrEdtTemplateCreate(&tpl1, never, 0, 1);
    ocrEdtTemplateCreate(&tpl2, never, 0, 2);
    ocrEdtTemplateCreate(&sink_tpl, sink, 0, 1);

    ocrEventCreate(&dead, OCR_EVENT_ONCE_T, EVT_PROP_NONE);
    ocrEventDestroy(dead);
    out = NULL_GUID;
    ocrAssert(ocrEdtCreate(&edt, tpl1, 0, NULL, 1, &dead, EDT_PROP_NONE, NULL_HINT, &out) != 0);
    ocrAssert(ocrGuidIsNull(out)); /* no output event was made for it */

    ocrEventCreate(&live, OCR_EVENT_ONCE_T, EVT_PROP_NONE);
    ocrGuid_t both[2] = {live, dead};
    ocrAssert(ocrEdtCreate(&edt, tpl2, 0, NULL, 2, both, EDT_PROP_FINISH, NULL_HINT, NULL) != 0);
    ocrEventSatisfy(live, NULL_GUID); /* no one waits on it: nothing runs, nothing fails */

    ocrEventParams_t params;
    params.EVENT_CHANNEL.maxGen = 1;
    params.EVENT_CHANNEL.nbSat = 1;
    params.EVENT_CHANNEL.nbDeps = 1;
    ocrAssert(ocrEventCreateParams(&channel, OCR_EVENT_CHANNEL_T, EVT_PROP_TAKES_ARG, &params) == 0);
    ocrEdtCreate(&waiting, sink_tpl, 0, NULL, 1, NULL, EDT_PROP_NONE, NULL_HINT, NULL);
    ocrAssert(ocrAddDependence(channel, waiting, 0, DB_MODE_NULL) == 0);
    ocrAssert(ocrEdtCreate(&edt, tpl1, 0, NULL, 1, &channel, EDT_PROP_NONE, NULL_HINT, NULL) != 0);
    ocrEventSatisfy(channel, NULL_GUID); /* the one accepted dependence runs `sink` */

    ocrEdtTemplateDestroy(tpl1);
    ocrEdtTemplateDestroy(tpl2);
    ocrEdtTemplateDestroy(sink_tpl);
    return NULL_GUID;
}

static ocrGuid_t finished(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrShutdown();
    return NULL_GUID;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t scope_tpl, finished_tpl, scope_edt, done, last;
    ocrEdtTemplateCreate(&scope_tpl, scope, 0, 1);
    ocrEdtTemplateCreate(&finished_tpl, finished, 0, 1);
    /* The finish EDT's output event fires once every EDT created in its scope has ended.
     * The scope waits for a dependence given after `last` depends on `done`: a
     * scope that ran at once could end, and its ONCE output event go, first. */
    ocrEdtCreate(&scope_edt, scope_tpl, 0, NULL, 1, NULL, EDT_PROP_FINISH, NULL_HINT, &done);
    ocrEdtCreate(&last, finished_tpl, 0, NULL, 1, &done, EDT_PROP_NONE, NULL_HINT, NULL);
    ocrAddDependence(NULL_GUID, scope_edt, 0, DB_MODE_NULL);
    ocrEdtTemplateDestroy(scope_tpl);
    ocrEdtTemplateDestroy(finished_tpl);
    return NULL_GUID;
}
