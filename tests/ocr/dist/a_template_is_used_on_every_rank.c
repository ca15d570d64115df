/* SPDX-License-Identifier: MIT */
/* An EDT template made on rank 0 creates EDTs on every rank: its GUID travels
 * as a parameter, each rank creates a leaf from it (fetching it from rank 0),
 * and every leaf adds its rank into a counter block held exclusively (EW). */
#include "dist_test.h"

static ocrGuid_t leaf(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    u64* sum = (u64*)depv[0].ptr;
    *sum += paramv[0] + 1;
    return NULL_GUID;
}

/* paramv: the leaf template and the counter. */
static ocrGuid_t branch(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t tpl = {.guid = (intptr_t)paramv[0]}, counter = {.guid = (intptr_t)paramv[1]}, edt;
    u64 rank = current_rank();
    ocrEdtCreate(&edt, tpl, 1, &rank, 1, NULL, EDT_PROP_NONE, NULL_HINT, NULL);
    ocrAddDependence(counter, edt, 0, DB_MODE_EW);
    return NULL_GUID;
}

static ocrGuid_t check(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    const u64 n = rank_count(), expected = n * (n + 1) / 2;
    const u64 got = *(const u64*)depv[1].ptr;
    CHECK(got == expected, "the leaves added %llu, expected %llu", (unsigned long long)got,
          (unsigned long long)expected);
    ocrPrintf("one template made EDTs on %llu rank(s)\n", (unsigned long long)n);
    ocrShutdown();
    return NULL_GUID;
}

/* paramv[0]: the counter; a branch per rank (a finish EDT: its output event waits for all). */
static ocrGuid_t all(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t leaf_tpl, branch_tpl, edt;
    ocrHint_t hint;
    ocrEdtTemplateCreate(&leaf_tpl, leaf, 1, 1);
    ocrEdtTemplateCreate(&branch_tpl, branch, 2, 0);
    u64 params[2] = {(u64)leaf_tpl.guid, paramv[0]};
    for (u64 r = 0; r < rank_count(); ++r) {
        ocrEdtCreate(&edt, branch_tpl, 2, params, 0, NULL, EDT_PROP_NONE, on_rank(&hint, r, 1), NULL);
    }
    return NULL_GUID;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t counter, all_tpl, check_tpl, finish, out, checker;
    u64* sum;
    ocrDbCreate(&counter, (void**)&sum, sizeof(u64), DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    *sum = 0;
    ocrDbRelease(counter);
    ocrEdtTemplateCreate(&all_tpl, all, 1, 1);
    ocrEdtTemplateCreate(&check_tpl, check, 0, 2);
    u64 param = (u64)counter.guid;
    ocrEdtCreate(&finish, all_tpl, 1, &param, 1, NULL, EDT_PROP_FINISH, NULL_HINT, &out);
    ocrEdtCreate(&checker, check_tpl, 0, NULL, 2, NULL, EDT_PROP_NONE, NULL_HINT, NULL);
    ocrAddDependence(out, checker, 0, DB_MODE_NULL);
    ocrAddDependence(counter, checker, 1, DB_MODE_RO);
    ocrAddDependence(NULL_GUID, finish, 0, DB_MODE_NULL); /* started once its output event is wired */
    return NULL_GUID;
}
