/* SPDX-License-Identifier: MIT */
/* blocking_tasks.c: tasks that block in the kernel, and what the blocking
 * monitor does about it (docs/monitor.md, docs/getting-started/tasks.md).
 *
 *   strata ocr --monitor off  ./blocking_tasks     one task per core at a time
 *   strata ocr --monitor ebpf ./blocking_tasks     a core runs another task while one sleeps
 *
 * Each of TASKS tasks sleeps 200 ms (nanosleep: its worker thread blocks in
 * the kernel). strata's runtime keeps one running worker per core; with a
 * monitor, a core whose worker blocked has no ready worker, the monitor says
 * so, and the runtime wakes another worker of that core, which takes the next
 * task. The program counts how many tasks ran at once and compares it with
 * the cores it may use. */
#define _GNU_SOURCE
#include <sched.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ocr.h"

enum { TASKS = 8 };
static int running, most_at_once;

static u64 guid_to_u64(ocrGuid_t g) {
    u64 v;
    memcpy(&v, &g, sizeof v);
    return v;
}

static ocrGuid_t u64_to_guid(u64 v) {
    ocrGuid_t g;
    memcpy(&g, &v, sizeof g);
    return g;
}

/* paramv: the event to satisfy when done. */
static ocrGuid_t sleeper(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    (void)paramc, (void)depc, (void)depv;
    const int now = __atomic_add_fetch(&running, 1, __ATOMIC_SEQ_CST);
    int most = __atomic_load_n(&most_at_once, __ATOMIC_SEQ_CST);
    while (now > most &&
           !__atomic_compare_exchange_n(&most_at_once, &most, now, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    }
    const struct timespec pause = {0, 200 * 1000 * 1000};
    nanosleep(&pause, NULL);
    __atomic_sub_fetch(&running, 1, __ATOMIC_SEQ_CST);
    ocrEventSatisfy(u64_to_guid(paramv[0]), NULL_GUID);
    return NULL_GUID;
}

static ocrGuid_t report(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    (void)paramc, (void)paramv, (void)depc, (void)depv;
    cpu_set_t cpus;
    /* The process's main thread has the job's CPUs; each worker is bound to one of them. */
    sched_getaffinity(getpid(), sizeof cpus, &cpus);
    const int cores = CPU_COUNT(&cpus);
    ocrPrintf(
        "%d tasks that sleep 200 ms: %s\n", TASKS,
        most_at_once > cores ? "a core ran another task while one slept" : "at most one task per core ran at a time");
    ocrShutdown();
    return NULL_GUID;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    (void)paramc, (void)paramv, (void)depc, (void)depv;
    ocrGuid_t done[TASKS], report_template, report_edt, sleeper_template;
    for (int i = 0; i < TASKS; ++i) ocrEventCreate(&done[i], OCR_EVENT_ONCE_T, EVT_PROP_NONE);
    ocrEdtTemplateCreate(&report_template, report, 0, TASKS);
    ocrEdtCreate(&report_edt, report_template, 0, NULL, TASKS, done, EDT_PROP_NONE, NULL_HINT, NULL);
    ocrEdtTemplateCreate(&sleeper_template, sleeper, 1, 0);
    for (int i = 0; i < TASKS; ++i) {
        u64 event = guid_to_u64(done[i]);
        ocrGuid_t edt;
        ocrEdtCreate(&edt, sleeper_template, 1, &event, 0, NULL, EDT_PROP_NONE, NULL_HINT, NULL);
    }
    return NULL_GUID;
}
