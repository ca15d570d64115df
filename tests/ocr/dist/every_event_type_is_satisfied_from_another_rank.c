/* SPDX-License-Identifier: MIT */
/* Events of every type live on rank 0 and are satisfied by EDTs of other
 * ranks: ONCE, IDEM (twice: the second is ignored), STICKY, LATCH (incremented
 * on one rank, decremented on another), COUNTED and CHANNEL. A consumer on the
 * last rank gets each satisfaction's data block (made on the satisfying rank)
 * or, for the latch, NULL_GUID. */
#include "dist_test.h"

enum { ONCE, IDEM, STICKY, LATCH, COUNTED, CHANNEL, EVENTS };

static ocrGuid_t block_of(u64 value) {
    ocrGuid_t db;
    u64* data;
    ocrDbCreate(&db, (void**)&data, sizeof(u64), DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    *data = value;
    ocrDbRelease(db);
    return db;
}

/* paramv: the events' GUIDs. */
static ocrGuid_t satisfy_most(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    const ocrGuid_t* events = (const ocrGuid_t*)paramv;
    for (u32 i = 0; i < EVENTS; ++i) {
        if (i == LATCH) {
            ocrEventSatisfySlot(events[i], NULL_GUID, OCR_EVENT_LATCH_INCR_SLOT);
        } else {
            ocrEventSatisfy(events[i], block_of(100 + i));
        }
    }
    return NULL_GUID;
}

static ocrGuid_t satisfy_rest(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    const ocrGuid_t* events = (const ocrGuid_t*)paramv;
    ocrEventSatisfySlot(events[LATCH], NULL_GUID, OCR_EVENT_LATCH_DECR_SLOT);
    ocrEventSatisfy(events[IDEM], block_of(999)); /* ignored if the first came first, else the first is */
    return NULL_GUID;
}

static ocrGuid_t consume(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    for (u32 i = 0; i < EVENTS; ++i) {
        if (i == LATCH) {
            CHECK(ocrGuidIsNull(depv[i].guid), "the latch carried a data block");
            continue;
        }
        const u64 got = *(const u64*)depv[i].ptr;
        CHECK(got == 100 + i || (i == IDEM && got == 999), "event %u gave %llu", i, (unsigned long long)got);
    }
    CHECK(current_rank() == rank_count() - 1, "the consumer runs on rank %llu", (unsigned long long)current_rank());
    ocrPrintf("%d event types satisfied from other ranks\n", EVENTS);
    ocrShutdown();
    return NULL_GUID;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t events[EVENTS];
    ocrEventParams_t counted = {.EVENT_COUNTED = {.nbDeps = 1}};
    ocrEventParams_t channel = {.EVENT_CHANNEL = {.maxGen = EVENT_CHANNEL_UNBOUNDED, .nbSat = 1, .nbDeps = 1}};
    ocrEventCreate(&events[ONCE], OCR_EVENT_ONCE_T, EVT_PROP_TAKES_ARG);
    ocrEventCreate(&events[IDEM], OCR_EVENT_IDEM_T, EVT_PROP_TAKES_ARG);
    ocrEventCreate(&events[STICKY], OCR_EVENT_STICKY_T, EVT_PROP_TAKES_ARG);
    ocrEventCreate(&events[LATCH], OCR_EVENT_LATCH_T, EVT_PROP_NONE);
    ocrEventCreateParams(&events[COUNTED], OCR_EVENT_COUNTED_T, EVT_PROP_TAKES_ARG, &counted);
    ocrEventCreateParams(&events[CHANNEL], OCR_EVENT_CHANNEL_T, EVT_PROP_TAKES_ARG, &channel);
    ocrGuid_t consume_tpl, most_tpl, rest_tpl, consumer, edt;
    ocrHint_t hint;
    ocrEdtTemplateCreate(&consume_tpl, consume, 0, EVENTS);
    ocrEdtTemplateCreate(&most_tpl, satisfy_most, EVENTS, 0);
    ocrEdtTemplateCreate(&rest_tpl, satisfy_rest, EVENTS, 0);
    ocrEdtCreate(&consumer, consume_tpl, 0, NULL, EVENTS, NULL, EDT_PROP_NONE, on_rank(&hint, rank_count() - 1, 1),
                 NULL);
    for (u32 i = 0; i < EVENTS; ++i) {
        ocrAddDependence(events[i], consumer, i, i == LATCH ? DB_MODE_NULL : DB_MODE_RO);
    }
    ocrEdtCreate(&edt, most_tpl, EVENTS, (u64*)events, 0, NULL, EDT_PROP_NONE, on_rank(&hint, 1, 1), NULL);
    ocrEdtCreate(&edt, rest_tpl, EVENTS, (u64*)events, 0, NULL, EDT_PROP_NONE, on_rank(&hint, 2, 1), NULL);
    return NULL_GUID;
}
