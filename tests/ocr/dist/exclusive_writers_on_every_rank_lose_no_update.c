/* SPDX-License-Identifier: MIT */
/* One counter block on rank 0, incremented by EDTs of every rank holding it
 * EW and by others holding it RW (remote write holds are exclusive at the
 * owner): after all of them (a finish EDT waits for them) it holds exactly the
 * number of increments. argv[1]: increments per rank (default 50). */
#include <stdlib.h>

#include "dist_test.h"

static ocrGuid_t bump(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    u64* counter = (u64*)depv[0].ptr;
    const u64 before = *counter;
    for (volatile int spin = 0; spin < 1000; ++spin) {
    }
    *counter = before + 1; /* a lost update would show as a smaller total */
    return NULL_GUID;
}

/* paramv: the counter, the increments; runs on its rank, makes that many bumpers there. */
static ocrGuid_t spawn(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t counter = {.guid = (intptr_t)paramv[0]}, tpl, edt;
    ocrEdtTemplateCreate(&tpl, bump, 0, 1);
    for (u64 i = 0; i < paramv[1]; ++i) {
        ocrEdtCreate(&edt, tpl, 0, NULL, 1, NULL, EDT_PROP_NONE, NULL_HINT, NULL);
        ocrAddDependence(counter, edt, 0, i % 2 == 0 ? DB_MODE_EW : DB_MODE_RW);
    }
    return NULL_GUID;
}

static ocrGuid_t all(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t tpl, edt;
    ocrHint_t hint;
    ocrEdtTemplateCreate(&tpl, spawn, 2, 0);
    for (u64 r = 0; r < rank_count(); ++r) {
        ocrEdtCreate(&edt, tpl, 2, paramv, 0, NULL, EDT_PROP_NONE, on_rank(&hint, r, 1), NULL);
    }
    return NULL_GUID;
}

static ocrGuid_t check(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    const u64 expected = rank_count() * paramv[0], got = *(const u64*)depv[1].ptr;
    CHECK(got == expected, "the counter holds %llu, expected %llu", (unsigned long long)got,
          (unsigned long long)expected);
    ocrPrintf("%llu increments from %llu rank(s), none lost\n", (unsigned long long)got,
              (unsigned long long)rank_count());
    ocrShutdown();
    return NULL_GUID;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    u64 per_rank = 50;
    if (ocrGetArgc(depv[0].ptr) > 1) per_rank = strtoull(ocrGetArgv(depv[0].ptr, 1), NULL, 10);
    ocrGuid_t counter, all_tpl, check_tpl, finish, out, checker;
    u64* value;
    ocrDbCreate(&counter, (void**)&value, sizeof(u64), DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    *value = 0;
    ocrDbRelease(counter);
    u64 params[2] = {(u64)counter.guid, per_rank};
    ocrEdtTemplateCreate(&all_tpl, all, 2, 1);
    ocrEdtTemplateCreate(&check_tpl, check, 1, 2);
    ocrEdtCreate(&finish, all_tpl, 2, params, 1, NULL, EDT_PROP_FINISH, NULL_HINT, &out);
    ocrEdtCreate(&checker, check_tpl, 1, &per_rank, 2, NULL, EDT_PROP_NONE, NULL_HINT, NULL);
    ocrAddDependence(out, checker, 0, DB_MODE_NULL);
    ocrAddDependence(counter, checker, 1, DB_MODE_RO);
    ocrAddDependence(NULL_GUID, finish, 0, DB_MODE_NULL);
    return NULL_GUID;
}
