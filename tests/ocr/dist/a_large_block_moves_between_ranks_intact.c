/* SPDX-License-Identifier: MIT */
/* A block of several MiB (moved as byte ranges, not inside messages) made on
 * rank 1 by an EDT of rank 0 (OCR_HINT_DB_AFFINITY) and filled there, then
 * changed by an EW holder on rank 2, then checked by an RO reader on rank 0:
 * every word is what the two writers wrote. argv[1]: MiB (default 8). */
#include <stdlib.h>

#include "dist_test.h"

static ocrGuid_t change(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    u64* words = (u64*)depv[0].ptr;
    for (u64 i = 0; i < paramv[0]; i += 3) words[i] ^= 0xffff;
    return NULL_GUID;
}

static ocrGuid_t check(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    const u64* words = (const u64*)depv[0].ptr;
    for (u64 i = 0; i < paramv[0]; ++i) {
        const u64 expected = (i * 2654435761u) ^ (i % 3 == 0 ? 0xffff : 0);
        CHECK(words[i] == expected, "word %llu is %llx, expected %llx", (unsigned long long)i,
              (unsigned long long)words[i], (unsigned long long)expected);
    }
    ocrPrintf("%llu MiB crossed the ranks intact\n", (unsigned long long)(paramv[0] * 8 >> 20));
    ocrShutdown();
    return NULL_GUID;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    u64 mib = 8;
    if (ocrGetArgc(depv[0].ptr) > 1) mib = strtoull(ocrGetArgv(depv[0].ptr, 1), NULL, 10);
    u64 words = mib << 17;
    ocrGuid_t block, change_tpl, check_tpl, changer, checker, out;
    ocrHint_t hint;
    u64* data;
    u8 rc = ocrDbCreate(&block, (void**)&data, words * sizeof(u64), DB_PROP_NONE, on_rank(&hint, 1, 0), NO_ALLOC);
    CHECK(rc == 0 && rank_of(block) == 1 % rank_count(), "the block is not on rank 1");
    for (u64 i = 0; i < words; ++i) data[i] = i * 2654435761u;
    ocrDbRelease(block);
    ocrEdtTemplateCreate(&change_tpl, change, 1, 1);
    ocrEdtTemplateCreate(&check_tpl, check, 1, 2);
    ocrEdtCreate(&changer, change_tpl, 1, &words, 1, NULL, EDT_PROP_NONE, on_rank(&hint, 2, 1), &out);
    ocrEdtCreate(&checker, check_tpl, 1, &words, 2, NULL, EDT_PROP_NONE, NULL_HINT, NULL);
    ocrAddDependence(block, checker, 0, DB_MODE_RO);
    ocrAddDependence(out, checker, 1, DB_MODE_NULL);
    ocrAddDependence(block, changer, 0, DB_MODE_EW);
    return NULL_GUID;
}
