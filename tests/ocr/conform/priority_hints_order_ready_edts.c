/* SPDX-License-Identifier: MIT */
/* OCR_HINT_EDT_PRIORITY orders ready EDTs (issue 26): among EDTs that are
 * ready together, a higher value starts first (the reference's PRIORITY
 * scheduler: "higher value is greater priority"), and EDTs without a
 * priority start after every prioritized one. Run on one worker, where the
 * start order is deterministic.
 *
 * Ten jobs wait on one event; their priorities come three ways, as programs
 * set them: the hint of ocrEdtCreate, ocrSetHint on the EDT after its
 * creation (as the reference's task-priorities example does), and ocrSetHint
 * on the template before the EDT is made. Two jobs have no priority. When
 * the event fires every job is ready at once; each writes its number at the
 * next place of a shared block. A last EDT checks the order:
 * priorities 9, 8, ..., 1, then the two without one. */
#include <stdio.h>

#include "extensions/ocr-hints.h"
#include "extensions/ocr-runtime-itf.h"
#include "ocr.h"

#define JOBS 11

typedef struct {
    u64 next;
    u64 order[JOBS];
} Order;

/* paramv[0]: the job's priority (0: none). */
static ocrGuid_t job(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    (void)paramc;
    (void)depc;
    Order* order = (Order*)depv[1].ptr;
    u64 at = __atomic_fetch_add(&order->next, 1, __ATOMIC_SEQ_CST);
    order->order[at] = paramv[0];
    return NULL_GUID;
}

static ocrGuid_t check(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    (void)paramc;
    (void)paramv;
    const Order* order = (const Order*)depv[depc - 1].ptr;
    const u64 expected[JOBS] = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 0};
    char seen[JOBS * 4 + 1] = {0};
    int bad = order->next != JOBS;
    for (u64 i = 0; i < JOBS; ++i) {
        snprintf(seen + i * 3, 4, "%2llu ", (unsigned long long)order->order[i]);
        bad |= order->order[i] != expected[i];
    }
    if (bad) {
        ocrPrintf("start order by priority: %s; expected 9 8 7 6 5 4 3 2 1 0 0 (0: no priority)\n", seen);
        ocrAbort(1);
    } else {
        ocrShutdown();
    }
    return NULL_GUID;
}

static ocrHint_t priority_hint(u64 priority) {
    ocrHint_t hint;
    ocrHintInit(&hint, OCR_HINT_EDT_T);
    ocrSetHintValue(&hint, OCR_HINT_EDT_PRIORITY, priority);
    return hint;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    (void)paramc;
    (void)paramv;
    (void)depc;
    (void)depv;
    if (ocrNbWorkers() != 1) {
        ocrPrintf("run this on one worker (STRATA_WORKERS=1): the start order is deterministic only there\n");
        ocrAbort(2);
        return NULL_GUID;
    }
    ocrGuid_t block;
    Order* order = NULL;
    ocrDbCreate(&block, (void**)&order, sizeof(Order), DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    order->next = 0;
    ocrDbRelease(block);

    ocrGuid_t go;
    ocrEventCreate(&go, OCR_EVENT_STICKY_T, EVT_PROP_NONE);
    ocrGuid_t plain;
    ocrGuid_t prioritized;
    ocrEdtTemplateCreate(&plain, job, 1, 2);
    ocrEdtTemplateCreate(&prioritized, job, 1, 2);
    ocrHint_t template_hint = priority_hint(4);
    ocrSetHint(prioritized, &template_hint);

    ocrGuid_t done[JOBS];
    /* Created in an order unrelated to the priorities (and to LIFO or FIFO). */
    const u64 priorities[JOBS] = {3, 0, 9, 1, 6, 4, 8, 0, 2, 7, 5};
    for (int i = 0; i < JOBS; ++i) {
        u64 priority = priorities[i];
        ocrGuid_t edt;
        ocrGuid_t deps[2] = {go, UNINITIALIZED_GUID};
        if (priority == 4) {
            ocrEdtCreate(&edt, prioritized, 1, &priority, 2, deps, EDT_PROP_NONE, NULL_HINT, &done[i]);
        } else if (priority % 2 == 1) {
            ocrHint_t hint = priority_hint(priority);
            ocrEdtCreate(&edt, plain, 1, &priority, 2, deps, EDT_PROP_NONE, &hint, &done[i]);
        } else {
            ocrEdtCreate(&edt, plain, 1, &priority, 2, deps, EDT_PROP_NONE, NULL_HINT, &done[i]);
            if (priority != 0) {
                ocrHint_t hint = priority_hint(priority);
                ocrSetHint(edt, &hint);
            }
        }
        ocrAddDependence(block, edt, 1, DB_MODE_RW);
    }

    ocrGuid_t checker_template;
    ocrEdtTemplateCreate(&checker_template, check, 0, JOBS + 1);
    ocrGuid_t checker;
    ocrEdtCreate(&checker, checker_template, 0, NULL, JOBS + 1, NULL, EDT_PROP_NONE, NULL_HINT, NULL);
    for (int i = 0; i < JOBS; ++i) {
        ocrAddDependence(done[i], checker, (u32)i, DB_MODE_NULL);
    }
    ocrAddDependence(block, checker, JOBS, DB_MODE_RO);
    ocrEventSatisfy(go, NULL_GUID);
    return NULL_GUID;
}
