/* SPDX-License-Identifier: MIT */
/* ocrEdtCreate returns an error for the mismatches the specification names,
 * and creates nothing: paramc 0 with a non-NULL paramv, paramc > 0 with a NULL
 * paramv, counts that differ from the template's, and counts unknown in both
 * the template and the call. */
#include "ocr.h"

static ocrGuid_t never(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrAbort(7); /* none of the rejected EDTs may run */
    return NULL_GUID;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t fixed, open, edt;
    u64 params[2] = {1, 2};
    ocrEdtTemplateCreate(&fixed, never, 1, 0);
    ocrEdtTemplateCreate(&open, never, EDT_PARAM_UNK, EDT_PARAM_UNK);
    ocrAssert(ocrEdtCreate(&edt, open, 0, params, 0, NULL, EDT_PROP_NONE, NULL_HINT, NULL) != 0);
    ocrAssert(ocrEdtCreate(&edt, open, 2, NULL, 0, NULL, EDT_PROP_NONE, NULL_HINT, NULL) != 0);
    ocrAssert(ocrEdtCreate(&edt, fixed, 2, params, 0, NULL, EDT_PROP_NONE, NULL_HINT, NULL) != 0);
    ocrAssert(ocrEdtCreate(&edt, fixed, 1, params, 3, NULL, EDT_PROP_NONE, NULL_HINT, NULL) != 0);
    ocrAssert(ocrEdtCreate(&edt, open, EDT_PARAM_DEF, NULL, 0, NULL, EDT_PROP_NONE, NULL_HINT, NULL) != 0);
    ocrAssert(ocrEdtCreate(&edt, open, 0, NULL, EDT_PARAM_DEF, NULL, EDT_PROP_NONE, NULL_HINT, NULL) != 0);
    ocrEdtTemplateDestroy(fixed);
    ocrEdtTemplateDestroy(open);
    ocrShutdown();
    return NULL_GUID;
}
