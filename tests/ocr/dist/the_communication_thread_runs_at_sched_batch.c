/* SPDX-License-Identifier: MIT */
/* While a task runs, the communication thread of a distributed run
 * ("strata-ocr-comm") runs at SCHED_BATCH, so that its wakeups do not preempt
 * the workers (this mainEdt is such a task: the thread switches at its next
 * idle poll, and names itself as it starts, so the check waits up to 2 s for
 * both); with one rank there is
 * none. argv[1]: "batch" (the default) or "other", the policy expected when
 * STRATA_OCR_COMM_BATCH=0 keeps it at the normal policy. */
#define _GNU_SOURCE
#include <dirent.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dist_test.h"

/* The policy of the thread named "strata-ocr-comm" (-1: none); *count: how many have that name. */
static int comm_thread_policy(int* count) {
    int policy = -1;
    *count = 0;
    DIR* dir = opendir("/proc/self/task");
    if (dir == NULL) return -1;
    struct dirent* e;
    while ((e = readdir(dir)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char path[300], name[64] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE* f = fopen(path, "r");
        if (f == NULL) continue;
        if (fgets(name, sizeof name, f) == NULL) name[0] = '\0';
        fclose(f);
        if (strncmp(name, "strata-ocr-comm", 15) == 0) {
            ++*count;
            policy = sched_getscheduler((pid_t)atoi(e->d_name));
        }
    }
    closedir(dir);
    return policy;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    const char* want = ocrGetArgc(depv[0].ptr) > 1 ? ocrGetArgv(depv[0].ptr, 1) : "batch";
    const int expected = strcmp(want, "other") == 0 ? SCHED_OTHER : SCHED_BATCH;
    int count = 0;
    int policy = comm_thread_policy(&count);
    /* It names itself as it starts, maybe after mainEdt did. */
    for (int tries = 0; tries < 200 && rank_count() > 1 && (count != 1 || policy != expected); ++tries) {
        const struct timespec pause = {0, 10 * 1000 * 1000};
        nanosleep(&pause, NULL);
        policy = comm_thread_policy(&count);
    }
    if (rank_count() == 1) {
        CHECK(count == 0, "one rank, yet %d communication thread(s)", count);
    } else {
        CHECK(count == 1, "%llu ranks, %d communication thread(s)", (unsigned long long)rank_count(), count);
        CHECK(policy == expected, "the communication thread's policy is %d, expected %d (%s)", policy, expected, want);
    }
    ocrPrintf("%llu rank(s): %d communication thread(s), policy %d\n", (unsigned long long)rank_count(), count, policy);
    ocrShutdown();
    return NULL_GUID;
}
