/* SPDX-License-Identifier: MIT */
/* What one EDT sends to another rank waits in that rank's outbox and leaves in
 * one message when the EDT ends, and what waits while the EDT computes on
 * leaves anyway (docs/runtime.md, "Outboxes").
 *
 *   bundle  mainEdt (rank 0) creates 32 EDTs on the last rank, wires each one's
 *           output event to a sink and satisfies it: 96 messages to one rank.
 *           The sink checks that every EDT ran there. With STRATA_STATS=1 each
 *           rank prints how many messages it sent in how many posts
 *           (tests/python/test_ocr_dist_outbox.py compares them).
 *   linger  mainEdt creates one ready EDT on the last rank, then computes for
 *           400 ms; the EDT prints how long after its creation it started
 *           ("started_after_ms N"), both ranks reading CLOCK_MONOTONIC of one
 *           machine. */
#include <string.h>
#include <time.h>

#include "dist_test.h"

enum { kEdts = 32, kLingerMs = 400 };

static u64 now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (u64)ts.tv_sec * 1000000000ull + (u64)ts.tv_nsec;
}

static ocrGuid_t report(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t db;
    u64* data;
    u8 rc = ocrDbCreate(&db, (void**)&data, sizeof(u64), DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    CHECK(rc == 0, "ocrDbCreate: %u", rc);
    data[0] = current_rank();
    ocrDbRelease(db);
    return db;
}

static ocrGuid_t sink(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    for (u32 i = 0; i < depc; ++i) {
        const u64 ran_on = *(const u64*)depv[i].ptr;
        CHECK(ran_on == rank_count() - 1, "EDT %u ran on rank %llu, not the last", i, (unsigned long long)ran_on);
    }
    ocrPrintf("%u EDTs created and satisfied by one EDT ran on rank %llu\n", depc,
              (unsigned long long)(rank_count() - 1));
    ocrShutdown();
    return NULL_GUID;
}

static ocrGuid_t started(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrPrintf("started_after_ms %.1f\n", (double)(now_ns() - paramv[0]) / 1e6);
    ocrShutdown();
    return NULL_GUID;
}

static void bundle(void) {
    const u64 last = rank_count() - 1;
    ocrGuid_t report_tpl, sink_tpl, sink_edt;
    ocrHint_t hint;
    ocrEdtTemplateCreate(&report_tpl, report, 0, 1);
    ocrEdtTemplateCreate(&sink_tpl, sink, 0, kEdts);
    ocrEdtCreate(&sink_edt, sink_tpl, 0, NULL, kEdts, NULL, EDT_PROP_NONE, NULL_HINT, NULL);
    for (u32 i = 0; i < kEdts; ++i) {
        ocrGuid_t edt, out;
        ocrEdtCreate(&edt, report_tpl, 0, NULL, 1, NULL, EDT_PROP_NONE, on_rank(&hint, last, 1), &out);
        ocrAddDependence(out, sink_edt, i, DB_MODE_RO);
        ocrAddDependence(NULL_GUID, edt, 0, DB_MODE_NULL);
    }
}

static void linger(void) {
    ocrGuid_t tpl, edt;
    ocrHint_t hint;
    u64 created = now_ns();
    ocrEdtTemplateCreate(&tpl, started, 1, 0);
    ocrEdtCreate(&edt, tpl, 1, &created, 0, NULL, EDT_PROP_NONE, on_rank(&hint, rank_count() - 1, 1), NULL);
    volatile u64 spin = 0;
    while (now_ns() - created < (u64)kLingerMs * 1000000ull) spin = spin + 1;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    const char* mode = getArgc(depv[0].ptr) > 1 ? getArgv(depv[0].ptr, 1) : "";
    if (strcmp(mode, "bundle") == 0) {
        bundle();
    } else if (strcmp(mode, "linger") == 0) {
        linger();
    } else {
        CHECK(0, "usage: an_edt_s_messages_to_another_rank_leave_together bundle|linger (not '%s')", mode);
    }
    return NULL_GUID;
}
