/* SPDX-License-Identifier: MIT */
/* A program may define mainEdt in its own form (issue 26): the reference's
 * public headers do not declare it, so a definition whose parameters are
 * written differently (here const-qualified, depv as a pointer) compiles
 * with -Wall -Werror and runs. */
#include "ocr.h"

ocrGuid_t mainEdt(const u32 paramc, const u64* paramv, u32 depc, ocrEdtDep_t* depv) {
    if (paramc != 0 || paramv != NULL || depc != 1 || ocrGetArgc(depv[0].ptr) < 1) {
        ocrAbort(1);
        return NULL_GUID;
    }
    ocrShutdown();
    return NULL_GUID;
}
