/* SPDX-License-Identifier: MIT */
/* An EDT created with OCR_HINT_EDT_AFFINITY runs on the rank that affinity
 * names, and one created without a hint on the creating rank: mainEdt (rank 0)
 * creates one EDT per rank, each reports the rank it ran on through the data
 * block it returns, and a sink checks every report. */
#include "dist_test.h"

static ocrGuid_t report(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t db;
    u64* data;
    u8 rc = ocrDbCreate(&db, (void**)&data, 2 * sizeof(u64), DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    CHECK(rc == 0, "ocrDbCreate: %u", rc);
    data[0] = paramv[0];
    data[1] = current_rank();
    ocrDbRelease(db);
    return db;
}

static ocrGuid_t check(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    for (u32 i = 0; i < depc; ++i) {
        const u64* data = (const u64*)depv[i].ptr;
        const u64 expected = i + 1 < depc ? data[0] : 0; /* the last one had no hint: rank 0 */
        CHECK(data[1] == expected, "EDT %u ran on rank %llu, not %llu", i, (unsigned long long)data[1],
              (unsigned long long)expected);
    }
    CHECK(current_rank() == rank_count() - 1, "the sink runs on rank %llu", (unsigned long long)current_rank());
    ocrPrintf("%u EDTs ran on the ranks their affinities name\n", depc);
    ocrShutdown();
    return NULL_GUID;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    const u64 ranks = rank_count();
    CHECK(current_rank() == 0, "mainEdt runs on rank %llu", (unsigned long long)current_rank());
    ocrGuid_t report_tpl, check_tpl, sink;
    ocrHint_t hint;
    ocrEdtTemplateCreate(&report_tpl, report, 1, 1);
    ocrEdtTemplateCreate(&check_tpl, check, 0, (u32)ranks + 1);
    ocrEdtCreate(&sink, check_tpl, 0, NULL, (u32)ranks + 1, NULL, EDT_PROP_NONE, on_rank(&hint, ranks - 1, 1), NULL);
    for (u64 r = 0; r <= ranks; ++r) {
        ocrGuid_t edt, out;
        /* Started once its output event is wired: a ONCE event goes with its satisfaction. */
        ocrEdtCreate(&edt, report_tpl, 1, &r, 1, NULL, EDT_PROP_NONE, r < ranks ? on_rank(&hint, r, 1) : NULL_HINT,
                     &out);
        ocrAddDependence(out, sink, (u32)r, DB_MODE_RO);
        ocrAddDependence(NULL_GUID, edt, 0, DB_MODE_NULL);
    }
    return NULL_GUID;
}
