/* SPDX-License-Identifier: MIT */
/* ocrDbRelease of another rank's block in the middle of an EDT ends the hold
 * there: a consumer started by an event the writer satisfies after the
 * release sees the bytes written before it. ocrDbDestroy of another rank's
 * block the EDT holds ends the hold and the block: its owner no longer has it. */
#include "dist_test.h"
#include "extensions/ocr-db-info.h"

static ocrGuid_t reader(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    const u64 got = *(const u64*)depv[0].ptr;
    CHECK(got == 77, "the reader saw %llu, not the bytes written before the release", (unsigned long long)got);
    return NULL_GUID;
}

/* depv[0]: block A of rank 0 (RW); depv[1]: block B of rank 0 (RW); paramv: the event. */
static ocrGuid_t writer(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    *(u64*)depv[0].ptr = 77;
    ocrDbRelease(depv[0].guid);
    ocrGuid_t event = {.guid = (intptr_t)paramv[0]};
    ocrEventSatisfy(event, NULL_GUID);
    CHECK(ocrDbDestroy(depv[1].guid) == 0, "ocrDbDestroy of a held block of rank 0");
    return NULL_GUID;
}

static ocrGuid_t check(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t b = {.guid = (intptr_t)paramv[0]};
    u64 size = 0;
    /* Destroyed where it lives: ocrDbGetSize there says it is no block. */
    CHECK(ocrDbGetSize(b, &size) != 0, "block B still has a size (%llu)", (unsigned long long)size);
    ocrPrintf("release and destroy of another rank's block honoured\n");
    ocrShutdown();
    return NULL_GUID;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t a, b, event, reader_tpl, writer_tpl, check_tpl, r, w, c, out;
    ocrHint_t hint;
    u64* data;
    ocrDbCreate(&a, (void**)&data, sizeof(u64), DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    *data = 1;
    ocrDbRelease(a);
    ocrDbCreate(&b, (void**)&data, sizeof(u64), DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    ocrDbRelease(b);
    ocrEventCreate(&event, OCR_EVENT_STICKY_T, EVT_PROP_NONE);
    ocrEdtTemplateCreate(&reader_tpl, reader, 0, 2);
    ocrEdtTemplateCreate(&writer_tpl, writer, 1, 3);
    ocrEdtTemplateCreate(&check_tpl, check, 1, 1);
    u64 event_param = (u64)event.guid, b_param = (u64)b.guid;
    /* The reader (last rank) reads block A once the writer (rank 1) released it. */
    ocrEdtCreate(&r, reader_tpl, 0, NULL, 2, NULL, EDT_PROP_NONE, on_rank(&hint, rank_count() - 1, 1), NULL);
    ocrAddDependence(a, r, 0, DB_MODE_RO);
    ocrAddDependence(event, r, 1, DB_MODE_NULL);
    ocrEdtCreate(&w, writer_tpl, 1, &event_param, 3, NULL, EDT_PROP_NONE, on_rank(&hint, 1, 1), &out);
    ocrEdtCreate(&c, check_tpl, 1, &b_param, 1, NULL, EDT_PROP_NONE, NULL_HINT, NULL);
    ocrAddDependence(out, c, 0, DB_MODE_NULL);
    ocrAddDependence(a, w, 0, DB_MODE_RW);
    ocrAddDependence(b, w, 1, DB_MODE_RW);
    ocrAddDependence(NULL_GUID, w, 2, DB_MODE_NULL);
    return NULL_GUID;
}
