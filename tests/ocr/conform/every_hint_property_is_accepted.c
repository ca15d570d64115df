/* SPDX-License-Identifier: MIT */
/* Every ocrHintProp_t property of the 1.2 headers can be set, read back and
 * given to the create calls (those strata cannot act on are no-ops), and an
 * unset one reads as absent. The affinity properties hold an affinity of the
 * job (a_bad_affinity_hint_is_refused: anything else is refused). */
#include "extensions/ocr-affinity.h"
#include "extensions/ocr-hints.h"
#include "ocr.h"

static ocrGuid_t task(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrAssert(*(u64*)depv[0].ptr == 5);
    ocrShutdown();
    return NULL_GUID;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrHintProp_t edt_props[] = {OCR_HINT_EDT_PRIORITY,        OCR_HINT_EDT_SLOT_MAX_ACCESS,
                                 OCR_HINT_EDT_AFFINITY,        OCR_HINT_EDT_DISPERSE,
                                 OCR_HINT_EDT_SPACE,           OCR_HINT_EDT_TIME,
                                 OCR_HINT_EDT_STATS_HW_CYCLES, OCR_HINT_EDT_STATS_L1_HITS,
                                 OCR_HINT_EDT_STATS_L1_MISSES, OCR_HINT_EDT_STATS_FLOAT_OPS};
    ocrHintProp_t db_props[] = {OCR_HINT_DB_AFFINITY, OCR_HINT_DB_NEAR, OCR_HINT_DB_HIGHBW, OCR_HINT_DB_EAGER,
                                OCR_HINT_DB_LAZY};
    ocrHint_t edt_hint, db_hint;
    ocrHintVal_t value;
    ocrHintInit(&edt_hint, OCR_HINT_EDT_T);
    ocrHintInit(&db_hint, OCR_HINT_DB_T);
    ocrAssert(ocrGetHintValue(&db_hint, OCR_HINT_DB_EAGER, &value) != 0);
    ocrGuid_t here;
    ocrAssert(ocrAffinityGetCurrent(&here) == 0);
    const u64 affinity = ocrAffinityToHintValue(here);
    for (u32 i = 0; i < sizeof(edt_props) / sizeof(edt_props[0]); ++i) {
        ocrAssert(
            ocrSetHintValue(&edt_hint, edt_props[i], edt_props[i] == OCR_HINT_EDT_AFFINITY ? affinity : 100 + i) == 0);
    }
    for (u32 i = 0; i < sizeof(db_props) / sizeof(db_props[0]); ++i) {
        ocrAssert(ocrSetHintValue(&db_hint, db_props[i], db_props[i] == OCR_HINT_DB_AFFINITY ? affinity : 1) == 0);
    }
    for (u32 i = 0; i < sizeof(edt_props) / sizeof(edt_props[0]); ++i) {
        ocrAssert(ocrGetHintValue(&edt_hint, edt_props[i], &value) == 0 &&
                  value == (edt_props[i] == OCR_HINT_EDT_AFFINITY ? affinity : 100 + i));
    }
    ocrAssert(ocrUnsetHintValue(&db_hint, OCR_HINT_DB_LAZY) == 0);
    ocrAssert(ocrGetHintValue(&db_hint, OCR_HINT_DB_LAZY, &value) != 0);
    ocrAssert(ocrGetHintValue(&db_hint, OCR_HINT_DB_EAGER, &value) == 0 && value == 1);

    ocrGuid_t db, tpl, edt;
    u64* data;
    ocrAssert(ocrDbCreate(&db, (void**)&data, sizeof(u64), DB_PROP_NONE, &db_hint, NO_ALLOC) == 0);
    *data = 5;
    ocrDbRelease(db);
    ocrEdtTemplateCreate(&tpl, task, 0, 1);
    ocrAssert(ocrSetHint(tpl, &edt_hint) == 0);
    ocrAssert(ocrEdtCreate(&edt, tpl, 0, NULL, 1, &db, EDT_PROP_NONE, &edt_hint, NULL) == 0);
    return NULL_GUID;
}
