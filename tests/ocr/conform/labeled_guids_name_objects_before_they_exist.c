/* SPDX-License-Identifier: MIT */
/* Labeled GUIDs: a range gives GUIDs by index before the objects exist; EDTs
 * that race to create the same labeled event with GUID_PROP_CHECK see exactly
 * one success and OCR_EGUIDEXISTS for the others; GUID_PROP_BLOCK waits until
 * the object there is destroyed; maps turn tuples into GUIDs. */
#include "extensions/ocr-labeling.h"
#include "ocr.h"

#define LABELS 8
#define RACERS 4

/* Each racer tries to create every labeled event and counts its wins in its
 * own slot of a results block (RW, distinct slots: no two racers write the same word). */
static ocrGuid_t racer(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t range = {.guid = (intptr_t)paramv[0]};
    u64* wins = (u64*)depv[0].ptr;
    for (u64 i = 0; i < LABELS; ++i) {
        ocrGuid_t evt;
        ocrAssert(ocrGuidFromIndex(&evt, range, i) == 0);
        u8 rc = ocrEventCreate(&evt, OCR_EVENT_STICKY_T, GUID_PROP_IS_LABELED | GUID_PROP_CHECK | EVT_PROP_TAKES_ARG);
        ocrAssert(rc == 0 || rc == OCR_EGUIDEXISTS);
        if (rc == 0) wins[paramv[1] * LABELS + i] += 1;
    }
    return NULL_GUID;
}

static ocrGuid_t judge(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t range = {.guid = (intptr_t)paramv[0]};
    u64* wins = (u64*)depv[0].ptr;
    for (u64 i = 0; i < LABELS; ++i) {
        u64 total = 0;
        for (u64 r = 0; r < RACERS; ++r) total += wins[r * LABELS + i];
        ocrAssert(total == 1); /* exactly one creator per label */
        ocrGuid_t evt;
        ocrGuidFromIndex(&evt, range, i);
        ocrGuidUserKind kind;
        ocrAssert(ocrGetGuidKind(&kind, evt) == 0 && kind == GUID_USER_EVENT_STICKY);
        ocrAssert(ocrEventDestroy(evt) == 0);
        ocrAssert(ocrGetGuidKind(&kind, evt) == 0 && kind == GUID_USER_NONE);
    }
    ocrShutdown();
    return NULL_GUID;
}

/* GUID_PROP_BLOCK: waits for the event at the label to be destroyed (by mainEdt's other child). */
static ocrGuid_t blocker(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t evt = {.guid = (intptr_t)paramv[0]};
    ocrAssert(ocrEventCreate(&evt, OCR_EVENT_IDEM_T, GUID_PROP_BLOCK) == 0);
    ocrEventDestroy(evt);
    return NULL_GUID;
}

static ocrGuid_t destroyer(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t evt = {.guid = (intptr_t)paramv[0]};
    ocrAssert(ocrEventDestroy(evt) == 0);
    return NULL_GUID;
}

static ocrGuid_t by_tuple(ocrGuid_t start, u64 skip, s64* params, s64* tuple) {
    return addValueToGuid(start, (u64)(tuple[0] * params[0] + tuple[1]) * skip);
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t range, map, g1, g2, bad;
    ocrAssert(ocrGuidRangeCreate(&range, LABELS, GUID_USER_EVENT_STICKY) == 0);
    ocrAssert(ocrGuidFromIndex(&bad, range, LABELS) != 0); /* out of the range */
    ocrAssert(ocrGuidFromIndex(&g1, range, 1) == 0 && ocrGuidFromIndex(&g2, range, 1) == 0);
    ocrAssert(ocrGuidIsEq(g1, g2)); /* the same label, the same GUID, from anyone */
    /* A second creation of a live labeled object is refused. */
    ocrGuid_t e = g1;
    ocrAssert(ocrEventCreate(&e, OCR_EVENT_STICKY_T, GUID_PROP_IS_LABELED) == 0);
    ocrAssert(ocrEventCreate(&e, OCR_EVENT_STICKY_T, GUID_PROP_CHECK) == OCR_EGUIDEXISTS);
    ocrAssert(ocrEventDestroy(e) == 0);

    s64 width = 3;
    ocrAssert(ocrGuidMapCreate(&map, 1, by_tuple, &width, 9, GUID_USER_EVENT_ONCE) == 0);
    s64 t1[2] = {1, 2}, t2[2] = {2, 1}, t3[2] = {3, 0};
    ocrAssert(ocrGuidFromLabel(&g1, map, t1) == 0 && ocrGuidFromLabel(&g2, map, t2) == 0);
    ocrAssert(!ocrGuidIsEq(g1, g2));
    ocrAssert(ocrGuidFromLabel(&bad, map, t3) != 0); /* index 9 is outside the 9 GUIDs */

    /* The judge runs after the racers, the blocker and the destroyer. */
    ocrGuid_t latch;
    ocrEventParams_t params;
    params.EVENT_LATCH.counter = RACERS + 2;
    ocrEventCreateParams(&latch, OCR_EVENT_LATCH_T, EVT_PROP_NONE, &params);

    /* GUID_PROP_BLOCK against a destroyer. */
    ocrGuid_t bout, dout;
    ocrGuid_t brange, blabel, btpl, dtpl, b, d;
    ocrGuidRangeCreate(&brange, 1, GUID_USER_EVENT_IDEM);
    ocrGuidFromIndex(&blabel, brange, 0);
    e = blabel;
    ocrAssert(ocrEventCreate(&e, OCR_EVENT_IDEM_T, GUID_PROP_IS_LABELED) == 0);
    u64 bp = (u64)blabel.guid;
    ocrEdtTemplateCreate(&btpl, blocker, 1, 1);
    ocrEdtTemplateCreate(&dtpl, destroyer, 1, 1);
    ocrEdtCreate(&b, btpl, 1, &bp, 1, NULL, EDT_PROP_NONE, NULL_HINT, &bout);
    ocrAddDependence(bout, latch, OCR_EVENT_LATCH_DECR_SLOT, DB_MODE_NULL);
    ocrEdtCreate(&d, dtpl, 1, &bp, 1, NULL, EDT_PROP_NONE, NULL_HINT, &dout);
    ocrAddDependence(dout, latch, OCR_EVENT_LATCH_DECR_SLOT, DB_MODE_NULL);
    ocrAddDependence(NULL_GUID, b, 0, DB_MODE_NULL);
    ocrAddDependence(NULL_GUID, d, 0, DB_MODE_NULL);

    /* The race. */
    ocrGuid_t wins, rtpl, jtpl, judge_edt;
    u64* w;
    ocrDbCreate(&wins, (void**)&w, sizeof(u64) * LABELS * RACERS, DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    for (u64 i = 0; i < LABELS * RACERS; ++i) w[i] = 0;
    ocrDbRelease(wins);
    ocrEdtTemplateCreate(&rtpl, racer, 2, 1);
    ocrEdtTemplateCreate(&jtpl, judge, 1, 2);
    u64 jp = (u64)range.guid;
    ocrEdtCreate(&judge_edt, jtpl, 1, &jp, 2, NULL, EDT_PROP_NONE, NULL_HINT, NULL);
    ocrAddDependence(wins, judge_edt, 0, DB_MODE_RW);
    ocrAddDependence(latch, judge_edt, 1, DB_MODE_NULL);
    for (u64 r = 0; r < RACERS; ++r) {
        ocrGuid_t edt, out;
        u64 rp[2] = {(u64)range.guid, r};
        ocrEdtCreate(&edt, rtpl, 2, rp, 1, NULL, EDT_PROP_NONE, NULL_HINT, &out);
        ocrAddDependence(out, latch, OCR_EVENT_LATCH_DECR_SLOT, DB_MODE_NULL);
        ocrAddDependence(wins, edt, 0, DB_MODE_RW);
    }
    return NULL_GUID;
}
