/* SPDX-License-Identifier: MIT */
/* COLLECTIVE events: every contributor's dependence for a generation gets one
 * block with the reduction of that generation's contributions (F8_ADD over two
 * values, for 3 generations in flight at once); U8_MAX picks the largest; a
 * contribution beyond maxGen incomplete generations is refused. */
#include "extensions/ocr-reduction-event.h"
#include "ocr.h"

#define N 6
#define G 3

static ocrGuid_t check_sum(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    u64 g = paramv[0];
    const double* r = (const double*)depv[0].ptr;
    ocrAssert(r[0] == (double)(N * (N + 1) / 2 + N * g));
    ocrAssert(r[1] == (double)(g * N * (N + 1) / 2));
    return NULL_GUID;
}

static ocrGuid_t contributor(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t evt = {.guid = (intptr_t)paramv[0]}, latch = {.guid = (intptr_t)paramv[1]};
    u64 i = paramv[2];
    ocrGuid_t tpl;
    ocrEdtTemplateCreate(&tpl, check_sum, 1, 1);
    for (u64 g = 0; g < G; ++g) {
        ocrGuid_t chk, out;
        ocrEdtCreate(&chk, tpl, 1, &g, 1, NULL, EDT_PROP_NONE, NULL_HINT, &out);
        ocrAddDependence(out, latch, OCR_EVENT_LATCH_DECR_SLOT, DB_MODE_NULL);
        ocrAssert(ocrAddDependenceSlot(evt, (u32)i, chk, 0, DB_MODE_RO) == 0);
        double v[2] = {(double)(i + 1 + g), (double)((i + 1) * g)};
        ocrAssert(ocrEventCollectiveSatisfySlot(evt, v, (u32)i) == 0);
    }
    ocrEdtTemplateDestroy(tpl);
    return NULL_GUID;
}

static ocrGuid_t check_max(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrAssert(*(const u64*)depv[0].ptr == 9);
    return NULL_GUID;
}

static ocrGuid_t done(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrShutdown();
    return NULL_GUID;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrEventParams_t params;
    ocrGuid_t sum, max, latch, ctpl, mtpl, dtpl, d, mchk, mout;
    params.EVENT_COLLECTIVE.maxGen = G;
    params.EVENT_COLLECTIVE.nbContribs = N;
    params.EVENT_COLLECTIVE.nbContribsPd = N;
    params.EVENT_COLLECTIVE.nbDatum = 2;
    params.EVENT_COLLECTIVE.arity = 2;
    params.EVENT_COLLECTIVE.op = REDOP_F8_ADD;
    params.EVENT_COLLECTIVE.type = COL_ALLREDUCE;
    params.EVENT_COLLECTIVE.reuseDbPerGen = false;
    ocrAssert(ocrEventCreateParams(&sum, OCR_EVENT_COLLECTIVE_T, EVT_PROP_TAKES_ARG, &params) == 0);

    params.EVENT_COLLECTIVE.maxGen = 1;
    params.EVENT_COLLECTIVE.nbContribs = 3;
    params.EVENT_COLLECTIVE.nbContribsPd = 3;
    params.EVENT_COLLECTIVE.nbDatum = 1;
    params.EVENT_COLLECTIVE.op = REDOP_U8_MAX;
    params.EVENT_COLLECTIVE.type = COL_REDUCE;
    ocrAssert(ocrEventCreateParams(&max, OCR_EVENT_COLLECTIVE_T, EVT_PROP_TAKES_ARG, &params) == 0);
    params.EVENT_COLLECTIVE.type = COL_BROADCAST;
    ocrGuid_t bad;
    ocrAssert(ocrEventCreateParams(&bad, OCR_EVENT_COLLECTIVE_T, EVT_PROP_TAKES_ARG, &params) != 0);

    params.EVENT_LATCH.counter = N * G + 1;
    ocrEventCreateParams(&latch, OCR_EVENT_LATCH_T, EVT_PROP_NONE, &params);
    ocrEdtTemplateCreate(&dtpl, done, 0, 1);
    ocrEdtCreate(&d, dtpl, 0, NULL, 1, &latch, EDT_PROP_NONE, NULL_HINT, NULL);

    /* U8_MAX from mainEdt: 5, 9, 2; slot 0 may not start generation 1 while 0 is incomplete. */
    ocrEdtTemplateCreate(&mtpl, check_max, 0, 1);
    ocrEdtCreate(&mchk, mtpl, 0, NULL, 1, NULL, EDT_PROP_NONE, NULL_HINT, &mout);
    ocrAddDependence(mout, latch, OCR_EVENT_LATCH_DECR_SLOT, DB_MODE_NULL);
    ocrAssert(ocrAddDependenceSlot(max, 1, mchk, 0, DB_MODE_RO) == 0);
    u64 five = 5, nine = 9, two = 2;
    ocrAssert(ocrEventCollectiveSatisfySlot(max, &five, 0) == 0);
    ocrAssert(ocrEventCollectiveSatisfySlot(max, &five, 0) == OCR_EBUSY);
    ocrAssert(ocrEventCollectiveSatisfySlot(max, &nine, 1) == 0);
    ocrAssert(ocrEventCollectiveSatisfySlot(max, &two, 2) == 0);
    ocrAssert(ocrEventCollectiveSatisfySlot(max, &two, 3) == OCR_EINVAL);

    ocrEdtTemplateCreate(&ctpl, contributor, 3, 0);
    for (u64 i = 0; i < N; ++i) {
        ocrGuid_t c;
        u64 p[3] = {(u64)sum.guid, (u64)latch.guid, i};
        ocrEdtCreate(&c, ctpl, 3, p, 0, NULL, EDT_PROP_NONE, NULL_HINT, NULL);
    }
    return NULL_GUID;
}
