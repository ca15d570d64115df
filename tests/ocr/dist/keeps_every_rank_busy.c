/* SPDX-License-Identifier: MIT */
/* A workload for the failure tests (tests/python/test_ocr_dist_failures.py):
 * every rank prints "rank R pid P", then one token per rank hops from rank to
 * rank, each hop carrying a data block made on the hop's rank (with
 * --db-placement shared: a shared-memory segment), for argv[1] seconds
 * (default 20); then the job shuts down with 0. */
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "dist_test.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* paramv: the hop template, the deadline (seconds, as bits), the hop count. */
static ocrGuid_t hop(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    double deadline;
    __builtin_memcpy(&deadline, &paramv[1], sizeof deadline);
    if (depc > 0 && depv[0].ptr != NULL) {
        CHECK(*(const u64*)depv[0].ptr == paramv[2], "hop %llu got block %llu", (unsigned long long)paramv[2],
              (unsigned long long)*(const u64*)depv[0].ptr);
    }
    if (now() > deadline) {
        ocrShutdown();
        return NULL_GUID;
    }
    usleep(2000);
    ocrGuid_t tpl = {.guid = (intptr_t)paramv[0]}, db, edt;
    u64* data;
    u8 made = ocrDbCreate(&db, (void**)&data, 4096, DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    if (made != 0) {
        ocrPrintf("rank %llu: ocrDbCreate failed: %u\n", (unsigned long long)current_rank(), (unsigned)made);
        ocrAbort(2);
        return NULL_GUID;
    }
    u64 next[3] = {paramv[0], paramv[1], paramv[2] + 1};
    *data = next[2];
    ocrDbRelease(db);
    ocrHint_t hint;
    ocrEdtCreate(&edt, tpl, 3, next, 1, NULL, EDT_PROP_NONE, on_rank(&hint, current_rank() + 1, 1), NULL);
    ocrAddDependence(db, edt, 0, DB_MODE_RO);
    return NULL_GUID;
}

static ocrGuid_t announce(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrPrintf("rank %llu pid %d\n", (unsigned long long)current_rank(), (int)getpid());
    ocrGuid_t tpl = {.guid = (intptr_t)paramv[0]}, edt;
    ocrEdtCreate(&edt, tpl, 3, paramv, 1, NULL, EDT_PROP_NONE, NULL_HINT, NULL);
    ocrAddDependence(NULL_GUID, edt, 0, DB_MODE_NULL);
    return NULL_GUID;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    double seconds = 20;
    if (ocrGetArgc(depv[0].ptr) > 1) seconds = atof(ocrGetArgv(depv[0].ptr, 1));
    const double deadline = now() + seconds;
    ocrGuid_t hop_tpl, announce_tpl, edt;
    ocrHint_t hint;
    ocrEdtTemplateCreate(&hop_tpl, hop, 3, 1);
    ocrEdtTemplateCreate(&announce_tpl, announce, 3, 0);
    u64 params[3] = {(u64)hop_tpl.guid, 0, 0};
    __builtin_memcpy(&params[1], &deadline, sizeof deadline);
    for (u64 r = 0; r < rank_count(); ++r) {
        ocrEdtCreate(&edt, announce_tpl, 3, params, 0, NULL, EDT_PROP_NONE, on_rank(&hint, r, 1), NULL);
    }
    return NULL_GUID;
}
