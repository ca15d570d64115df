/* SPDX-License-Identifier: MIT */
/* The worker count is what the user set (issue 26), and that many EDTs run at
 * the same time, more than there are cores if asked: as an MPI program on
 * OCR runs one EDT per rank, each waiting for the others.
 *
 *   every_worker_runs_an_edt_at_once <workers> [spin|block]
 *
 * ocrNbWorkers() must equal <workers>; then <workers> EDTs each announce
 * themselves and wait until all have (spinning, or sleeping 200 µs at a
 * time with `block`, so the blocking monitor sees them block). A runtime
 * with fewer workers never gets them all running: after 30 s the program
 * says how many ran at once and exits 3. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "extensions/ocr-runtime-itf.h"
#include "ocr.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* paramv: the number of ranks, 1 to sleep while waiting. */
static ocrGuid_t rank(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    (void)paramc;
    (void)depc;
    u64* arrived = (u64*)depv[0].ptr;
    __atomic_add_fetch(arrived, 1, __ATOMIC_SEQ_CST);
    const double give_up = now() + 30.0;
    while (__atomic_load_n(arrived, __ATOMIC_SEQ_CST) < paramv[0]) {
        if (now() > give_up) {
            ocrPrintf("only %llu of %llu EDTs ran at once\n",
                      (unsigned long long)__atomic_load_n(arrived, __ATOMIC_SEQ_CST), (unsigned long long)paramv[0]);
            ocrAbort(3);
            return NULL_GUID;
        }
        if (paramv[1] != 0) {
            usleep(200);
        }
    }
    return NULL_GUID;
}

static ocrGuid_t finish(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    (void)paramc;
    (void)paramv;
    (void)depc;
    (void)depv;
    ocrShutdown();
    return NULL_GUID;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    (void)paramc;
    (void)paramv;
    (void)depc;
    void* args = depv[0].ptr;
    if (ocrGetArgc(args) < 2) {
        ocrPrintf("usage: every_worker_runs_an_edt_at_once <workers> [spin|block]\n");
        ocrAbort(2);
        return NULL_GUID;
    }
    const u64 workers = strtoull(ocrGetArgv(args, 1), NULL, 10);
    const u64 block = ocrGetArgc(args) > 2 && strcmp(ocrGetArgv(args, 2), "block") == 0;
    if (ocrNbWorkers() != workers) {
        ocrPrintf("ocrNbWorkers() = %llu, expected %llu\n", (unsigned long long)ocrNbWorkers(),
                  (unsigned long long)workers);
        ocrAbort(4);
        return NULL_GUID;
    }
    ocrGuid_t counter;
    u64* arrived = NULL;
    ocrDbCreate(&counter, (void**)&arrived, sizeof(u64), DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    *arrived = 0;
    ocrDbRelease(counter);

    ocrGuid_t rank_template;
    ocrGuid_t finish_template;
    ocrEdtTemplateCreate(&rank_template, rank, 2, 1);
    ocrEdtTemplateCreate(&finish_template, finish, 0, EDT_PARAM_UNK);
    ocrGuid_t finisher;
    ocrEdtCreate(&finisher, finish_template, 0, NULL, (u32)workers, NULL, EDT_PROP_NONE, NULL_HINT, NULL);
    u64 params[2] = {workers, block};
    for (u64 i = 0; i < workers; ++i) {
        ocrGuid_t edt;
        ocrGuid_t done;
        ocrEdtCreate(&edt, rank_template, 2, params, 1, &counter, EDT_PROP_NONE, NULL_HINT, &done);
        ocrAddDependence(done, finisher, (u32)i, DB_MODE_NULL);
    }
    return NULL_GUID;
}
