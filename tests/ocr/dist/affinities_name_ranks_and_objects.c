/* SPDX-License-Identifier: MIT */
/* Affinities: ocrAffinityCount(AFFINITY_PD) is the number of ranks,
 * ocrAffinityGet lists them in order, AFFINITY_CURRENT is one, an index past
 * the last is refused with OCR_EINVAL, and ocrAffinityQuery of an EDT or a
 * data block names the rank it lives on (the creating rank without a hint). */
#include "dist_test.h"

static ocrGuid_t probe(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t self, db;
    void* data;
    ocrCurrentEdtGet(&self);
    CHECK(rank_of(self) == current_rank(), "an EDT's affinity is not its rank");
    u8 rc = ocrDbCreate(&db, &data, 8, DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    CHECK(rc == 0 && rank_of(db) == current_rank(), "a block made without a hint is not on its creator's rank");
    ocrDbDestroy(db);
    ocrHint_t hint;
    const u64 there = (current_rank() + 1) % rank_count();
    rc = ocrDbCreate(&db, &data, 8, DB_PROP_NONE, on_rank(&hint, there, 0), NO_ALLOC);
    CHECK(rc == 0 && rank_of(db) == there, "a block made with OCR_HINT_DB_AFFINITY is not on rank %llu",
          (unsigned long long)there);
    ocrDbDestroy(db);
    return NULL_GUID;
}

static ocrGuid_t probe_every_rank(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t tpl, edt;
    ocrHint_t hint;
    ocrEdtTemplateCreate(&tpl, probe, 0, 0);
    for (u64 r = 0; r < rank_count(); ++r) {
        ocrEdtCreate(&edt, tpl, 0, NULL, 0, NULL, EDT_PROP_NONE, on_rank(&hint, r, 1), NULL);
    }
    return NULL_GUID;
}

static ocrGuid_t done(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrPrintf("affinities checked on %llu rank(s)\n", (unsigned long long)rank_count());
    ocrShutdown();
    return NULL_GUID;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    u64 n = 0, current = 0;
    ocrAffinityCount(AFFINITY_PD, &n);
    ocrAffinityCount(AFFINITY_CURRENT, &current);
    CHECK(n >= 1 && n <= 64 && current == 1, "counts %llu and %llu", (unsigned long long)n,
          (unsigned long long)current);
    ocrGuid_t listed[64], one;
    u64 asked = n;
    CHECK(ocrAffinityGet(AFFINITY_PD, &asked, listed) == 0 && asked == n, "ocrAffinityGet");
    for (u64 r = 0; r < n; ++r) {
        CHECK(ocrAffinityGetAt(AFFINITY_PD, r, &one) == 0 &&
                  ocrAffinityToHintValue(one) == ocrAffinityToHintValue(listed[r]),
              "ocrAffinityGetAt(%llu)", (unsigned long long)r);
        for (u64 q = 0; q < r; ++q)
            CHECK(ocrAffinityToHintValue(listed[q]) != ocrAffinityToHintValue(listed[r]), "equal");
    }
    CHECK(ocrAffinityGetAt(AFFINITY_PD, n, &one) == OCR_EINVAL, "an index past the last is accepted");
    /* A finish EDT starts a probe on every rank; its output event ends the run. */
    ocrGuid_t all_tpl, done_tpl, all, out, sink;
    ocrEdtTemplateCreate(&all_tpl, probe_every_rank, 0, 1);
    ocrEdtTemplateCreate(&done_tpl, done, 0, 1);
    ocrEdtCreate(&all, all_tpl, 0, NULL, 1, NULL, EDT_PROP_FINISH, NULL_HINT, &out);
    ocrEdtCreate(&sink, done_tpl, 0, NULL, 1, &out, EDT_PROP_NONE, NULL_HINT, NULL);
    ocrAddDependence(NULL_GUID, all, 0, DB_MODE_NULL); /* started once its output event is wired */
    return NULL_GUID;
}
