/* SPDX-License-Identifier: MIT */
/* With -DOCR_ASSERT a false ocrAssert aborts the process (SIGABRT); a true one does nothing. */
#include "ocr.h"

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    u64 argc = getArgc(depv[0].ptr);
    ocrAssert(argc >= 1);
    ocrAssert(argc == 12345);
    ocrShutdown();
    return NULL_GUID;
}
