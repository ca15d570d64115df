/* SPDX-License-Identifier: MIT */
/* ocrAbort(n) ends the program with exit code n; EDTs not yet runnable never run. */
#include "ocr.h"

static ocrGuid_t never(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrAbort(99);
    return NULL_GUID;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t tpl, edt, evt;
    ocrEventCreate(&evt, OCR_EVENT_STICKY_T, EVT_PROP_NONE);
    ocrEdtTemplateCreate(&tpl, never, 0, 1);
    ocrEdtCreate(&edt, tpl, EDT_PARAM_DEF, NULL, EDT_PARAM_DEF, &evt, EDT_PROP_NONE, NULL_HINT, NULL);
    ocrAbort(42);
    return NULL_GUID;
}
