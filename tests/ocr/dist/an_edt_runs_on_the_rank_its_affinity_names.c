/* An EDT created with OCR_HINT_EDT_AFFINITY runs on the rank that affinity
 * names: mainEdt (rank 0) creates one EDT per rank, each reports the rank it
 * ran on (ocrAffinityGetCurrent) through a data block it returns, and a sink
 * on rank 0 checks every report. */
#include "extensions/ocr-affinity.h"
#include "ocr.h"

static ocrGuid_t report(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    (void)depv;
    ocrGuid_t here, db;
    u64* data;
    ocrAffinityGetCurrent(&here);
    u8 rc = ocrDbCreate(&db, (void**)&data, 2 * sizeof(u64), DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    ocrAssert(rc == 0);
    data[0] = paramv[0];
    data[1] = ocrAffinityToHintValue(here);
    ocrDbRelease(db);
    return db;
}

static ocrGuid_t check(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    for (u32 i = 0; i < depc; ++i) {
        const u64* data = (const u64*)depv[i].ptr;
        ocrGuid_t expected;
        ocrAssert(ocrAffinityGetAt(AFFINITY_PD, data[0], &expected) == 0);
        if (data[1] != ocrAffinityToHintValue(expected)) {
            ocrPrintf("EDT for rank %llu ran elsewhere\n", (unsigned long long)data[0]);
            ocrAbort(3);
            return NULL_GUID;
        }
    }
    ocrPrintf("%u EDTs ran on the ranks their affinities name\n", depc);
    ocrShutdown();
    return NULL_GUID;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    u64 ranks;
    ocrAffinityCount(AFFINITY_PD, &ranks);
    ocrGuid_t report_tpl, check_tpl, sink;
    ocrEdtTemplateCreate(&report_tpl, report, 1, 1);
    ocrEdtTemplateCreate(&check_tpl, check, 0, (u32)ranks);
    ocrEdtCreate(&sink, check_tpl, 0, NULL, (u32)ranks, NULL, EDT_PROP_NONE, NULL_HINT, NULL);
    for (u64 r = 0; r < ranks; ++r) {
        ocrGuid_t affinity, edt, out;
        ocrHint_t hint;
        ocrAffinityGetAt(AFFINITY_PD, r, &affinity);
        ocrHintInit(&hint, OCR_HINT_EDT_T);
        ocrSetHintValue(&hint, OCR_HINT_EDT_AFFINITY, ocrAffinityToHintValue(affinity));
        /* Started once its output event is wired: a ONCE event goes with its satisfaction. */
        ocrEdtCreate(&edt, report_tpl, 1, &r, 1, NULL, EDT_PROP_NONE, &hint, &out);
        ocrAddDependence(out, sink, (u32)r, DB_MODE_RO);
        ocrAddDependence(NULL_GUID, edt, 0, DB_MODE_NULL);
    }
    return NULL_GUID;
}
