/* SPDX-License-Identifier: MIT */
/* `strata ocr [options] ./app args` hands the program exactly its arguments:
 * in order, dash-prefixed ones included, strata's own option names included,
 * and no `--` added. The test passes the same list the program expects. */
#include <string.h>

#include "ocr.h"

static const char* const expected[] = {"--ds", "100", "--stats", "--monitor", "off", "--", "-h", "x y"};

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    u64 argc = getArgc(depv[0].ptr);
    u64 n = sizeof(expected) / sizeof(expected[0]);
    if (argc != n + 1) {
        ocrPrintf("argc=%d, expected %d\n", (int)argc, (int)(n + 1));
        ocrAbort(3);
        return NULL_GUID;
    }
    for (u64 i = 0; i < n; ++i) {
        const char* arg = getArgv(depv[0].ptr, i + 1);
        if (strcmp(arg, expected[i]) != 0) {
            ocrPrintf("argv[%d]='%s', expected '%s'\n", (int)(i + 1), arg, expected[i]);
            ocrAbort(4);
            return NULL_GUID;
        }
    }
    ocrShutdown();
    return NULL_GUID;
}
