/* SPDX-License-Identifier: MIT */
/* A rank's messages leave in the order they were sent, whichever their
 * destinations, also while they wait in the outbox (docs/runtime.md,
 * "Outboxes"): what reaches rank 2 through rank 1 arrives after what rank 0
 * sent rank 2 before.
 *
 * An EDT on rank 2 makes a ONCE event E and has `link` run on rank 0, which
 * adds a dependence from E to `done` (a message to rank 2, which may wait in
 * the outbox), then creates `fire` on rank 1 with 24 KiB of parameters (a
 * message too large to wait), which satisfies E (a message from rank 1 to
 * rank 2); then it computes on for 300 ms. Should the satisfaction reach rank 2
 * first, E fires with no dependence and is gone, the dependence fails ("not a
 * live event") and the job ends with exit code 1; in order, `done` runs and
 * shuts the job down. A first `fire` on rank 1 (E unset) fetches the template
 * there before, so that the second one runs at once. Fewer than 3 ranks:
 * nothing to check. */
#include <time.h>

#include "dist_test.h"

static u64 now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (u64)ts.tv_sec * 1000000000ull + (u64)ts.tv_nsec;
}

static void spin_us(u64 us) {
    const u64 until = now_ns() + us * 1000ull;
    while (now_ns() < until) {
    }
}

static ocrGuid_t done(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrPrintf("the dependence reached rank 2 before the satisfaction sent through rank 1\n");
    ocrShutdown();
    return NULL_GUID;
}

enum { kFireWords = 3072 }; /* 24 KiB: more than a message that may wait in the outbox */
enum { P_EVENT, P_FIRE_TPL };

static ocrGuid_t make_event(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]);

static ocrGuid_t guid(u64 value) {
    return (ocrGuid_t){.guid = (intptr_t)value};
}

/* On rank 1: the first (E unset) has make_event run on rank 2; the second satisfies E. */
static ocrGuid_t fire(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    CHECK(current_rank() == 1, "fire runs on rank %llu", (unsigned long long)current_rank());
    CHECK(paramc == kFireWords && paramv[kFireWords - 1] == kFireWords - 1, "fire got %u parameters", paramc);
    if (paramv[P_EVENT] != 0) {
        ocrEventSatisfy(guid(paramv[P_EVENT]), NULL_GUID);
        return NULL_GUID;
    }
    ocrGuid_t tpl, edt;
    ocrHint_t hint;
    ocrEdtTemplateCreate(&tpl, make_event, 1, 0);
    ocrEdtCreate(&edt, tpl, 1, &paramv[P_FIRE_TPL], 0, NULL, EDT_PROP_NONE, on_rank(&hint, 2, 1), NULL);
    return NULL_GUID;
}

static void create_fire(u64 event, u64 fire_tpl) {
    static u64 words[kFireWords];
    for (u64 i = 0; i < kFireWords; ++i) words[i] = i;
    words[P_EVENT] = event;
    words[P_FIRE_TPL] = fire_tpl;
    ocrGuid_t edt;
    ocrHint_t hint;
    ocrEdtCreate(&edt, guid(fire_tpl), kFireWords, words, 0, NULL, EDT_PROP_NONE, on_rank(&hint, 1, 1), NULL);
}

/* On rank 0: the dependence on E (to rank 2), then the second fire (to rank 1). */
static ocrGuid_t link(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    CHECK(current_rank() == 0, "link runs on rank %llu", (unsigned long long)current_rank());
    ocrGuid_t done_tpl, done_edt;
    ocrEdtTemplateCreate(&done_tpl, done, 0, 1);
    ocrEdtCreate(&done_edt, done_tpl, 0, NULL, 1, NULL, EDT_PROP_NONE, NULL_HINT, NULL);
    ocrAddDependence(guid(paramv[P_EVENT]), done_edt, 0, DB_MODE_NULL);
    create_fire(paramv[P_EVENT], paramv[P_FIRE_TPL]);
    spin_us(300000);
    return NULL_GUID;
}

/* On rank 2: E, then link on rank 0. */
static ocrGuid_t make_event(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    CHECK(current_rank() == 2, "make_event runs on rank %llu", (unsigned long long)current_rank());
    ocrGuid_t event, tpl, edt;
    ocrHint_t hint;
    ocrEventCreate(&event, OCR_EVENT_ONCE_T, EVT_PROP_NONE);
    u64 params[2] = {(u64)event.guid, paramv[0]};
    ocrEdtTemplateCreate(&tpl, link, 2, 0);
    ocrEdtCreate(&edt, tpl, 2, params, 0, NULL, EDT_PROP_NONE, on_rank(&hint, 0, 1), NULL);
    return NULL_GUID;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    if (rank_count() < 3) {
        ocrPrintf("%llu rank(s): nothing to check (3 needed)\n", (unsigned long long)rank_count());
        ocrShutdown();
        return NULL_GUID;
    }
    ocrGuid_t fire_tpl;
    ocrEdtTemplateCreate(&fire_tpl, fire, kFireWords, 0);
    create_fire(0, (u64)fire_tpl.guid);
    return NULL_GUID;
}
