/* SPDX-License-Identifier: MIT */
/* A labeled GUID names one object job-wide: mainEdt makes a range of STICKY
 * events (on rank 0); an EDT on every rank r computes ocrGuidFromIndex(range, r)
 * itself, creates the event there (on the range's rank), satisfies it with its
 * rank, and reports the GUID it computed for every index. A sink wired to each
 * event by its own computation checks the values and that all ranks computed
 * the same GUIDs. */
#include "dist_test.h"
#include "extensions/ocr-labeling.h"

#define MAX_RANKS 64

static ocrGuid_t worker(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t range = {.guid = (intptr_t)paramv[0]}, sink = {.guid = (intptr_t)paramv[1]};
    const u64 n = rank_count(), r = current_rank();
    ocrGuid_t mine, db;
    CHECK(ocrGuidFromIndex(&mine, range, r) == 0, "ocrGuidFromIndex on rank %llu", (unsigned long long)r);
    u8 rc = ocrEventCreate(&mine, OCR_EVENT_STICKY_T, GUID_PROP_IS_LABELED | EVT_PROP_TAKES_ARG);
    CHECK(rc == 0, "creating labeled event %llu: %u", (unsigned long long)r, rc);
    /* The same GUID again: it exists now. */
    ocrGuid_t again = mine;
    rc = ocrEventCreate(&again, OCR_EVENT_STICKY_T, GUID_PROP_CHECK | EVT_PROP_TAKES_ARG);
    CHECK(rc == OCR_EGUIDEXISTS, "re-creating labeled event %llu gave %u", (unsigned long long)r, rc);
    ocrAddDependence(mine, sink, (u32)r, DB_MODE_RO);
    u64* data;
    ocrDbCreate(&db, (void**)&data, (1 + n) * sizeof(u64), DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    data[0] = r;
    for (u64 i = 0; i < n; ++i) {
        ocrGuid_t g;
        ocrGuidFromIndex(&g, range, i);
        data[1 + i] = (u64)g.guid;
    }
    ocrDbRelease(db);
    ocrEventSatisfy(mine, db);
    return NULL_GUID;
}

static ocrGuid_t check(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t range = {.guid = (intptr_t)paramv[0]};
    for (u32 r = 0; r < depc; ++r) {
        const u64* data = (const u64*)depv[r].ptr;
        CHECK(data[0] == r, "labeled event %u carried rank %llu", r, (unsigned long long)data[0]);
        for (u32 i = 0; i < depc; ++i) {
            ocrGuid_t g;
            ocrGuidFromIndex(&g, range, i);
            CHECK(data[1 + i] == (u64)g.guid, "rank %u computed another GUID for index %u", r, i);
        }
        CHECK(rank_of(depv[r].guid) == r % rank_count(), "the block of rank %u is not there", r);
    }
    ocrPrintf("%u labeled GUIDs named the same events on every rank\n", depc);
    ocrShutdown();
    return NULL_GUID;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    const u64 n = rank_count();
    CHECK(n <= MAX_RANKS, "too many ranks");
    ocrGuid_t range, worker_tpl, check_tpl, sink, edt;
    ocrHint_t hint;
    ocrGuidRangeCreate(&range, n, GUID_USER_EVENT_STICKY);
    ocrEdtTemplateCreate(&worker_tpl, worker, 2, 0);
    ocrEdtTemplateCreate(&check_tpl, check, 1, (u32)n);
    u64 range_param = (u64)range.guid;
    ocrEdtCreate(&sink, check_tpl, 1, &range_param, (u32)n, NULL, EDT_PROP_NONE, on_rank(&hint, n / 2, 1), NULL);
    u64 params[2] = {(u64)range.guid, (u64)sink.guid};
    for (u64 r = 0; r < n; ++r) {
        ocrEdtCreate(&edt, worker_tpl, 2, params, 0, NULL, EDT_PROP_NONE, on_rank(&hint, r, 1), NULL);
    }
    return NULL_GUID;
}
