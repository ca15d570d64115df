/* SPDX-License-Identifier: MIT */
/* ocrShutdown() ends the program with exit code 0, even with EDTs left waiting. */
#include "ocr.h"

static ocrGuid_t never(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrAbort(5);
    return NULL_GUID;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t tpl, edt;
    ocrEdtTemplateCreate(&tpl, never, 0, 1);
    ocrEdtCreate(&edt, tpl, 0, NULL, 1, NULL, EDT_PROP_NONE, NULL_HINT, NULL);
    ocrEdtTemplateDestroy(tpl);
    ocrShutdown();
    return NULL_GUID;
}
