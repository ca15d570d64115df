/* SPDX-License-Identifier: MIT */
/* A FINISH EDT's output event fires once the EDT and every EDT it created
 * (transitively) completed, and carries the data block the EDT returned. */
#include "ocr.h"

#define CHILDREN 16

static ocrGuid_t child(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    u64* counter = (u64*)depv[0].ptr;
    counter[0] += 1; /* EW: no two children at once */
    return NULL_GUID;
}

static ocrGuid_t parent(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t counter = depv[0].guid, tpl, edt, result;
    ocrEdtTemplateCreate(&tpl, child, 0, 1);
    for (int i = 0; i < CHILDREN; ++i) {
        ocrEdtCreate(&edt, tpl, 0, NULL, 1, NULL, EDT_PROP_NONE, NULL_HINT, NULL);
        ocrAddDependence(counter, edt, 0, DB_MODE_EW);
    }
    ocrEdtTemplateDestroy(tpl);
    u64* r;
    ocrDbCreate(&result, (void**)&r, sizeof(u64) * 2, DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    r[0] = 777;
    r[1] = (u64)counter.guid;
    return result;
}

static ocrGuid_t check(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrAssert(!ocrGuidIsNull(depv[0].guid)); /* the reference passes the returned block */
    u64* r = (u64*)depv[0].ptr;
    ocrAssert(r[0] == 777);
    u64* counter = (u64*)depv[1].ptr;
    ocrAssert(counter[0] == CHILDREN); /* every child finished first */
    ocrShutdown();
    return NULL_GUID;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t counter, ptpl, ctpl, p, c, out;
    u64* value;
    ocrDbCreate(&counter, (void**)&value, sizeof(u64), DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    value[0] = 0;
    ocrDbRelease(counter);
    ocrEdtTemplateCreate(&ptpl, parent, 0, 1);
    ocrEdtTemplateCreate(&ctpl, check, 0, 2);
    ocrEdtCreate(&p, ptpl, 0, NULL, 1, NULL, EDT_PROP_FINISH, NULL_HINT, &out);
    ocrEdtCreate(&c, ctpl, 0, NULL, 2, NULL, EDT_PROP_NONE, NULL_HINT, NULL);
    ocrAddDependence(out, c, 0, DB_MODE_RO);
    ocrAddDependence(counter, c, 1, DB_MODE_RO);
    ocrAddDependence(counter, p, 0, DB_MODE_RO);
    return NULL_GUID;
}
