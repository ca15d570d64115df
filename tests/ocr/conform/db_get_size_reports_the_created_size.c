/* SPDX-License-Identifier: MIT */
/* ocrDbGetSize gives the size passed to ocrDbCreate for a block the EDT holds,
 * OCR_EACCES for one it does not hold, OCR_EINVAL for a GUID that is no block. */
#include "extensions/ocr-db-info.h"
#include "ocr.h"

static ocrGuid_t edt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    u64 size = 0;
    ocrGuid_t other = {.guid = (intptr_t)paramv[0]};
    ocrAssert(ocrDbGetSize(depv[0].guid, &size) == 0 && size == 1000);
    ocrAssert(ocrDbGetSize(other, &size) == OCR_EACCES);
    ocrAssert(ocrDbGetSize(NULL_GUID, &size) == OCR_EINVAL);
    ocrShutdown();
    return NULL_GUID;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t a, b, tpl, e;
    void* p;
    u64 size = 0;
    ocrDbCreate(&a, &p, 1000, DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    ocrDbCreate(&b, &p, 3, DB_PROP_NO_ACQUIRE, NULL_HINT, NO_ALLOC);
    ocrAssert(ocrDbGetSize(a, &size) == 0 && size == 1000);
    ocrDbRelease(a);
    ocrEdtTemplateCreate(&tpl, edt, 1, 1);
    u64 other = (u64)b.guid;
    ocrEdtCreate(&e, tpl, 1, &other, 1, &a, EDT_PROP_NONE, NULL_HINT, NULL);
    return NULL_GUID;
}
