/* SPDX-License-Identifier: MIT */
/* ocrAddDependence called on one rank links an event of a second rank to an
 * EDT of a third; the EDT gets the data block the event carried (from a
 * fourth rank, if there is one), and an EDT's output event on one rank feeds
 * an event on another. */
#include "dist_test.h"

static ocrGuid_t make_event(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t event;
    ocrEventCreate(&event, OCR_EVENT_STICKY_T, EVT_PROP_TAKES_ARG);
    return event; /* chained: this EDT's output event fires when `event` does */
}

static ocrGuid_t produce(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t db;
    u64* data;
    ocrDbCreate(&db, (void**)&data, sizeof(u64), DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    *data = 4242;
    ocrDbRelease(db);
    return db;
}

static ocrGuid_t consume(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    CHECK(*(const u64*)depv[0].ptr == 4242, "the consumer got %llu", (unsigned long long)*(const u64*)depv[0].ptr);
    CHECK(current_rank() == 2 % rank_count(), "the consumer runs on rank %llu", (unsigned long long)current_rank());
    ocrPrintf("a dependence across ranks delivered its block\n");
    ocrShutdown();
    return NULL_GUID;
}

/* On rank 1: links the event of rank 0 (paramv[0]) to the consumer of rank 2 (paramv[1]). */
static ocrGuid_t link(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t event = {.guid = (intptr_t)paramv[0]}, consumer = {.guid = (intptr_t)paramv[1]};
    CHECK(ocrAddDependence(event, consumer, 0, DB_MODE_RO) == 0, "ocrAddDependence");
    return NULL_GUID;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t event, consume_tpl, link_tpl, produce_tpl, consumer, linker, producer, out;
    ocrHint_t hint;
    ocrEventCreate(&event, OCR_EVENT_STICKY_T, EVT_PROP_TAKES_ARG);
    ocrEdtTemplateCreate(&consume_tpl, consume, 0, 1);
    ocrEdtTemplateCreate(&link_tpl, link, 2, 0);
    ocrEdtTemplateCreate(&produce_tpl, produce, 0, 1);
    ocrEdtCreate(&consumer, consume_tpl, 0, NULL, 1, NULL, EDT_PROP_NONE, on_rank(&hint, 2, 1), NULL);
    u64 params[2] = {(u64)event.guid, (u64)consumer.guid};
    ocrEdtCreate(&linker, link_tpl, 2, params, 0, NULL, EDT_PROP_NONE, on_rank(&hint, 1, 1), NULL);
    /* The producer on rank 3: its output event satisfies the event of rank 0. */
    ocrEdtCreate(&producer, produce_tpl, 0, NULL, 1, NULL, EDT_PROP_NONE, on_rank(&hint, 3, 1), &out);
    ocrAddDependence(out, event, 0, DB_MODE_RO);
    ocrAddDependence(NULL_GUID, producer, 0, DB_MODE_NULL);
    (void)make_event;
    return NULL_GUID;
}
