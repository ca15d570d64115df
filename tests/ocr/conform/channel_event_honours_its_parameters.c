/* SPDX-License-Identifier: MIT */
/* CHANNEL events: with maxGen EVENT_CHANNEL_UNBOUNDED any number of
 * satisfactions wait for dependences and are matched first in first out; with
 * maxGen 2 a third unmatched satisfaction (or dependence) is refused;
 * maxGen 0 and nbSat or nbDeps other than 1 are refused at creation. */
#include "ocr.h"

#define N 20

static ocrGuid_t reader(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrAssert(*(u64*)depv[0].ptr == paramv[0]); /* dependence i gets satisfaction i */
    return NULL_GUID;
}

static ocrGuid_t done(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrShutdown();
    return NULL_GUID;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrEventParams_t params;
    ocrGuid_t bad, unbounded, bounded, tpl, dtpl, fin;
    params.EVENT_CHANNEL.maxGen = 0;
    params.EVENT_CHANNEL.nbSat = 1;
    params.EVENT_CHANNEL.nbDeps = 1;
    ocrAssert(ocrEventCreateParams(&bad, OCR_EVENT_CHANNEL_T, EVT_PROP_TAKES_ARG, &params) != 0);
    params.EVENT_CHANNEL.maxGen = 1;
    params.EVENT_CHANNEL.nbSat = 2;
    ocrAssert(ocrEventCreateParams(&bad, OCR_EVENT_CHANNEL_T, EVT_PROP_TAKES_ARG, &params) != 0);
    params.EVENT_CHANNEL.nbSat = 1;
    params.EVENT_CHANNEL.nbDeps = 0;
    ocrAssert(ocrEventCreateParams(&bad, OCR_EVENT_CHANNEL_T, EVT_PROP_TAKES_ARG, &params) != 0);

    params.EVENT_CHANNEL.nbDeps = 1;
    params.EVENT_CHANNEL.maxGen = EVENT_CHANNEL_UNBOUNDED;
    ocrAssert(ocrEventCreateParams(&unbounded, OCR_EVENT_CHANNEL_T, EVT_PROP_TAKES_ARG, &params) == 0);
    ocrGuid_t dbs[N];
    for (u64 i = 0; i < N; ++i) {
        u64* v;
        ocrDbCreate(&dbs[i], (void**)&v, sizeof(u64), DB_PROP_NONE, NULL_HINT, NO_ALLOC);
        *v = i;
        ocrDbRelease(dbs[i]);
        ocrAssert(ocrEventSatisfy(unbounded, dbs[i]) == 0);
    }
    /* The readers run inside a finish EDT's scope; its output event starts `done`. */
    ocrEdtTemplateCreate(&tpl, reader, 1, 1);
    ocrEdtTemplateCreate(&dtpl, done, 0, 1);
    ocrEdtCreate(&fin, dtpl, 0, NULL, 1, NULL, EDT_PROP_NONE, NULL_HINT, NULL);
    ocrGuid_t latch;
    params.EVENT_LATCH.counter = N;
    ocrEventCreateParams(&latch, OCR_EVENT_LATCH_T, EVT_PROP_NONE, &params);
    ocrAddDependence(latch, fin, 0, DB_MODE_NULL);
    for (u64 i = 0; i < N; ++i) {
        ocrGuid_t edt, out;
        ocrEdtCreate(&edt, tpl, 1, &i, 1, NULL, EDT_PROP_NONE, NULL_HINT, &out);
        ocrAddDependence(out, latch, OCR_EVENT_LATCH_DECR_SLOT, DB_MODE_NULL);
        ocrAssert(ocrAddDependence(unbounded, edt, 0, DB_MODE_RO) == 0);
    }

    params.EVENT_CHANNEL.maxGen = 2; /* the union held the latch's counter meanwhile */
    params.EVENT_CHANNEL.nbSat = 1;
    params.EVENT_CHANNEL.nbDeps = 1;
    ocrAssert(ocrEventCreateParams(&bounded, OCR_EVENT_CHANNEL_T, EVT_PROP_TAKES_ARG, &params) == 0);
    ocrAssert(ocrEventSatisfy(bounded, NULL_GUID) == 0);
    ocrAssert(ocrEventSatisfy(bounded, NULL_GUID) == 0);
    ocrAssert(ocrEventSatisfy(bounded, NULL_GUID) != 0); /* a third generation would exceed maxGen */
    return NULL_GUID;
}
