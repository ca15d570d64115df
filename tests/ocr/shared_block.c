/* SPDX-License-Identifier: MIT */
/* Hands a data block placed in shared memory to another process by its
 * handle (ocrDbGetShmHandle, extensions/ocr-db-shm.h), then checks what that
 * process wrote into it. tests/python/test_python_ocr_handle.py drives it.
 *
 *   cc shared_block.c -I<strata>/include/ocr -lstrata-ocr -o shared_block && ./shared_block 1048576
 *
 * Prints "handle <text>" (the block holds byte i = (i * 131 + 7) >> 3), waits
 * for one line on stdin, then prints "seen <the 32 bytes at offset 4096>". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extensions/ocr-db-shm.h"
#include "ocr.h"

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    (void)paramc;
    (void)paramv;
    (void)depc;
    u64 size = 1 << 20;
    if (ocrGetArgc(depv[0].ptr) > 1) {
        size = strtoull(ocrGetArgv(depv[0].ptr, 1), NULL, 10);
    }
    ocrHint_t hint;
    ocrHintInit(&hint, OCR_HINT_DB_T);
    ocrSetHintValue(&hint, OCR_HINT_DB_INTER, 1);
    ocrGuid_t db;
    unsigned char* data = NULL;
    ocrDbShmHandle_t handle;
    if (size < 4096 + 32 || ocrDbCreate(&db, (void**)&data, size, DB_PROP_NONE, &hint, NO_ALLOC) != 0) {
        fprintf(stderr, "shared_block: cannot create a shared block of %llu bytes\n", (unsigned long long)size);
        ocrAbort(2);
        return NULL_GUID;
    }
    for (u64 i = 0; i < size; ++i) {
        data[i] = (unsigned char)((i * 131 + 7) >> 3);
    }
    if (ocrDbGetShmHandle(db, &handle) != 0) {
        ocrAbort(3);
        return NULL_GUID;
    }
    printf("handle %s\n", handle.text);
    fflush(stdout);
    char line[64];
    if (fgets(line, sizeof line, stdin) == NULL) {
        ocrAbort(4);
        return NULL_GUID;
    }
    printf("seen %.32s\n", (const char*)data + 4096);
    fflush(stdout);
    ocrDbDestroy(db);
    ocrShutdown();
    return NULL_GUID;
}
