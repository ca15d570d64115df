/* SPDX-License-Identifier: MIT */
/* A COLLECTIVE event combines contributions made on every rank, as the
 * reference's distributed runtime does: a labeled event that a head EDT on
 * every rank creates (the same GUID and parameters: the first creates it, the
 * others join it and get 0; with GUID_PROP_CHECK, OCR_EGUIDEXISTS;
 * nbContribs = ranks * nbContribsPd), and
 * PER_RANK contributors per rank, slot = rank * PER_RANK + i. Each slot runs
 * GENERATIONS generations: it registers where the result goes (a continuation
 * on the next rank), then contributes (slot+1, (slot+1)*(g+1), g); the
 * continuation checks the sums of generation g, and makes the slot's next
 * contribution from its own rank. So every generation combines contributions
 * of every rank, slots move across ranks between generations, and results go
 * to dependents on other ranks. A second event reduces U8_MAX with
 * nbContribsPd = nbContribs, contributed to from rank 0 only, into a
 * dependence on the last rank. */
#include "dist_test.h"
#include "extensions/ocr-labeling.h"
#include "extensions/ocr-reduction-event.h"

#define PER_RANK 3
#define GENERATIONS 4
#define DATUMS 3

/* paramv of a contributor and of a continuation: the event, the latch, the
 * slot, the generation, the contributor template. */
enum { P_EVENT, P_LATCH, P_SLOT, P_GEN, P_TPL, P_COUNT };

static ocrGuid_t guid_param(u64 value) {
    ocrGuid_t g = {.guid = (intptr_t)value};
    return g;
}

static ocrGuid_t continuation(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]);

/* Registers where generation paramv[P_GEN] of the slot goes, then contributes. */
static ocrGuid_t contribute(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t event = guid_param(paramv[P_EVENT]), next;
    const u64 slot = paramv[P_SLOT], g = paramv[P_GEN];
    ocrHint_t hint;
    /* The continuation template has one slot; contributor and continuation share paramv. */
    ocrGuid_t cont_tpl;
    ocrEdtTemplateCreate(&cont_tpl, continuation, P_COUNT, 1);
    ocrEdtCreate(&next, cont_tpl, P_COUNT, paramv, 1, NULL, EDT_PROP_NONE, on_rank(&hint, current_rank() + 1, 1), NULL);
    ocrEdtTemplateDestroy(cont_tpl);
    u8 rc = ocrAddDependenceSlot(event, (u32)slot, next, 0, DB_MODE_RO);
    CHECK(rc == 0, "ocrAddDependenceSlot(slot %llu, generation %llu) gave %u", (unsigned long long)slot,
          (unsigned long long)g, rc);
    u64 values[DATUMS] = {slot + 1, (slot + 1) * (g + 1), g};
    rc = ocrEventCollectiveSatisfySlot(event, values, (u32)slot);
    CHECK(rc == 0, "ocrEventCollectiveSatisfySlot(slot %llu, generation %llu) gave %u", (unsigned long long)slot,
          (unsigned long long)g, rc);
    return NULL_GUID;
}

/* Checks generation g's result, then makes the slot's next contribution from this rank. */
static ocrGuid_t continuation(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    const u64 n = rank_count() * PER_RANK, g = paramv[P_GEN], slot = paramv[P_SLOT];
    const u64* sum = (const u64*)depv[0].ptr;
    CHECK(sum != NULL, "slot %llu got no block for generation %llu", (unsigned long long)slot, (unsigned long long)g);
    CHECK(sum[0] == n * (n + 1) / 2 && sum[1] == (g + 1) * n * (n + 1) / 2 && sum[2] == g * n,
          "slot %llu, generation %llu: got (%llu, %llu, %llu), expected (%llu, %llu, %llu)", (unsigned long long)slot,
          (unsigned long long)g, (unsigned long long)sum[0], (unsigned long long)sum[1], (unsigned long long)sum[2],
          (unsigned long long)(n * (n + 1) / 2), (unsigned long long)((g + 1) * n * (n + 1) / 2),
          (unsigned long long)(g * n));
    if (g + 1 == GENERATIONS) {
        ocrEventSatisfySlot(guid_param(paramv[P_LATCH]), NULL_GUID, OCR_EVENT_LATCH_DECR_SLOT);
        return NULL_GUID;
    }
    u64 params[P_COUNT];
    for (int i = 0; i < P_COUNT; ++i) params[i] = paramv[i];
    params[P_GEN] = g + 1;
    ocrGuid_t edt;
    ocrEdtCreate(&edt, guid_param(paramv[P_TPL]), P_COUNT, params, 0, NULL, EDT_PROP_NONE, NULL_HINT, NULL);
    return NULL_GUID;
}

/* On every rank: creates the labeled event (as every rank does in the
 * reference's programs) and starts this rank's contributors. */
static ocrGuid_t head(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t event = guid_param(paramv[P_EVENT]), tpl;
    ocrEventParams_t params = {0};
    params.EVENT_COLLECTIVE.nbContribs = (u32)(rank_count() * PER_RANK);
    params.EVENT_COLLECTIVE.nbContribsPd = PER_RANK;
    params.EVENT_COLLECTIVE.nbDatum = DATUMS;
    params.EVENT_COLLECTIVE.arity = 2;
    params.EVENT_COLLECTIVE.op = REDOP_U8_ADD;
    params.EVENT_COLLECTIVE.type = COL_ALLREDUCE;
    params.EVENT_COLLECTIVE.maxGen = 1;
    u8 rc = ocrEventCreateParams(&event, OCR_EVENT_COLLECTIVE_T, GUID_PROP_IS_LABELED, &params);
    CHECK(rc == 0, "creating (or joining) the labeled COLLECTIVE event on rank %llu gave %u",
          (unsigned long long)current_rank(), rc);
    ocrGuid_t again = event;
    rc = ocrEventCreateParams(&again, OCR_EVENT_COLLECTIVE_T, GUID_PROP_CHECK, &params);
    CHECK(rc == OCR_EGUIDEXISTS, "creating the COLLECTIVE event with GUID_PROP_CHECK on rank %llu gave %u",
          (unsigned long long)current_rank(), rc);
    ocrEdtTemplateCreate(&tpl, contribute, P_COUNT, 0);
    for (u64 i = 0; i < PER_RANK; ++i) {
        u64 p[P_COUNT] = {paramv[P_EVENT], paramv[P_LATCH], current_rank() * PER_RANK + i, 0, (u64)tpl.guid};
        ocrGuid_t edt;
        ocrEdtCreate(&edt, tpl, P_COUNT, p, 0, NULL, EDT_PROP_NONE, NULL_HINT, NULL);
    }
    return NULL_GUID;
}

static ocrGuid_t check_max(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    const u64 expected = 100 + rank_count() * 7;
    CHECK(current_rank() == rank_count() - 1, "the U8_MAX dependent ran on rank %llu",
          (unsigned long long)current_rank());
    CHECK(*(const u64*)depv[0].ptr == expected, "U8_MAX gave %llu, expected %llu",
          (unsigned long long)*(const u64*)depv[0].ptr, (unsigned long long)expected);
    return NULL_GUID;
}

static ocrGuid_t done(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrPrintf("%llu contributors on %llu ranks combined %d generations\n",
              (unsigned long long)(rank_count() * PER_RANK), (unsigned long long)rank_count(), GENERATIONS);
    ocrShutdown();
    return NULL_GUID;
}

/* A U8_MAX event of rank 0 whose one dependence waits on the last rank. */
static void max_on_the_last_rank(ocrGuid_t latch) {
    const u64 n = rank_count();
    ocrEventParams_t params = {0};
    params.EVENT_COLLECTIVE.nbContribs = (u32)n;
    params.EVENT_COLLECTIVE.nbContribsPd = (u32)n;
    params.EVENT_COLLECTIVE.nbDatum = 1;
    params.EVENT_COLLECTIVE.op = REDOP_U8_MAX;
    params.EVENT_COLLECTIVE.type = COL_REDUCE;
    params.EVENT_COLLECTIVE.maxGen = 1;
    ocrGuid_t event, tpl, edt, out;
    ocrHint_t hint;
    ocrEventCreateParams(&event, OCR_EVENT_COLLECTIVE_T, EVT_PROP_NONE, &params);
    ocrEdtTemplateCreate(&tpl, check_max, 0, 1);
    ocrEdtCreate(&edt, tpl, 0, NULL, 1, NULL, EDT_PROP_NONE, on_rank(&hint, n - 1, 1), &out);
    ocrAddDependence(out, latch, OCR_EVENT_LATCH_DECR_SLOT, DB_MODE_NULL);
    ocrAddDependenceSlot(event, 0, edt, 0, DB_MODE_RO);
    for (u64 slot = 0; slot < n; ++slot) {
        u64 value = 100 + (slot + 1) * 7;
        ocrEventCollectiveSatisfySlot(event, &value, (u32)slot);
    }
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    const u64 n = rank_count();
    ocrGuid_t range, event, latch, head_tpl, done_tpl, edt;
    ocrHint_t hint;
    ocrGuidRangeCreate(&range, 1, GUID_USER_EVENT_COLLECTIVE);
    ocrGuidFromIndex(&event, range, 0);
    ocrEventParams_t latch_params;
    latch_params.EVENT_LATCH.counter = n * PER_RANK + 1;
    ocrEventCreateParams(&latch, OCR_EVENT_LATCH_T, EVT_PROP_NONE, &latch_params);
    ocrEdtTemplateCreate(&done_tpl, done, 0, 1);
    ocrEdtCreate(&edt, done_tpl, 0, NULL, 1, &latch, EDT_PROP_NONE, NULL_HINT, NULL);
    ocrEdtTemplateCreate(&head_tpl, head, P_COUNT, 0);
    u64 params[P_COUNT] = {(u64)event.guid, (u64)latch.guid, 0, 0, 0};
    for (u64 r = 0; r < n; ++r) {
        ocrEdtCreate(&edt, head_tpl, P_COUNT, params, 0, NULL, EDT_PROP_NONE, on_rank(&hint, r, 1), NULL);
    }
    max_on_the_last_rank(latch);
    return NULL_GUID;
}
