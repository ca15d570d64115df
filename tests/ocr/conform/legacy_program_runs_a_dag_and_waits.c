/* SPDX-License-Identifier: MIT */
/* A C program that is not an OCR program (its own main, no mainEdt) starts
 * the runtime, runs a DAG twice and waits for each result, then finalizes;
 * its exit code is ocrLegacyFinalize's. */
#include <stdio.h>

#include "extensions/ocr-db-info.h"
#include "extensions/ocr-legacy.h"
#include "ocr.h"

#define N 64

static ocrGuid_t square(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    u64* v = (u64*)depv[0].ptr;
    v[paramv[0]] = paramv[0] * paramv[0];
    return NULL_GUID;
}

/* The finish EDT: one child per element, then returns the block. */
static ocrGuid_t squares(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t tpl, edt;
    ocrEdtTemplateCreate(&tpl, square, 1, 1);
    for (u64 i = 0; i < paramv[0]; ++i) {
        ocrEdtCreate(&edt, tpl, 1, &i, 1, &depv[0].guid, EDT_PROP_NONE, NULL_HINT, NULL);
    }
    ocrEdtTemplateDestroy(tpl);
    return depv[0].guid;
}

int main(int argc, const char* argv[]) {
    ocrConfig_t config;
    ocrGuid_t context, tpl;
    ocrParseArgs(argc, argv, &config);
    ocrLegacyInit(&context, &config);
    ocrEdtTemplateCreate(&tpl, squares, 1, 1);
    for (int round = 0; round < 2; ++round) {
        ocrGuid_t db, handle, result_guid;
        u64* data;
        void* result;
        u64 size = 0, n = N - (u64)round;
        ocrDbCreate(&db, (void**)&data, sizeof(u64) * N, DB_PROP_NONE, NULL_HINT, NO_ALLOC);
        for (u64 i = 0; i < N; ++i) data[i] = 0;
        if (ocrLegacySpawnOCR(&handle, tpl, 1, &n, 1, &db, context) != 0) return 10;
        if (ocrLegacyBlockProgress(handle, &result_guid, &result, &size, LEGACY_PROP_NONE) != 0) return 11;
        if (!ocrGuidIsEq(result_guid, db) || size != sizeof(u64) * N) return 12;
        for (u64 i = 0; i < N; ++i) {
            u64 want = i < n ? i * i : 0;
            if (((u64*)result)[i] != want) {
                fprintf(stderr, "round %d: element %d is %d, expected %d\n", round, (int)i, (int)((u64*)result)[i],
                        (int)want);
                return 13;
            }
        }
        ocrEventDestroy(handle);
        ocrDbDestroy(db);
    }
    ocrEdtTemplateDestroy(tpl);
    return ocrLegacyFinalize(context, false);
}
