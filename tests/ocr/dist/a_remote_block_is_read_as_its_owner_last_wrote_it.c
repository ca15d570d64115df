/* SPDX-License-Identifier: MIT */
/* A block of rank 0, read RO and CONST by EDTs of every rank (their copies are
 * kept), then rewritten on rank 0 (RW), then read again: the second readers
 * see the new bytes, never a stale copy. */
#include "dist_test.h"

#define WORDS 512

static ocrGuid_t read_block(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    const u64* ro = (const u64*)depv[0].ptr;
    const u64* cst = (const u64*)depv[1].ptr;
    for (u32 i = 0; i < WORDS; ++i) {
        CHECK(ro[i] == paramv[0] + i && cst[i] == paramv[0] + i, "word %u: RO %llu, CONST %llu, expected %llu", i,
              (unsigned long long)ro[i], (unsigned long long)cst[i], (unsigned long long)(paramv[0] + i));
    }
    return NULL_GUID;
}

static ocrGuid_t rewrite(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    u64* words = (u64*)depv[0].ptr;
    for (u32 i = 0; i < WORDS; ++i) words[i] = 1000 + i;
    return NULL_GUID;
}

/* paramv: the block, the value of its first word; readers on every rank (a finish EDT). */
static ocrGuid_t readers(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t block = {.guid = (intptr_t)paramv[0]}, tpl, edt;
    ocrHint_t hint;
    ocrEdtTemplateCreate(&tpl, read_block, 1, 2);
    for (u64 r = 0; r < rank_count(); ++r) {
        ocrEdtCreate(&edt, tpl, 1, &paramv[1], 2, NULL, EDT_PROP_NONE, on_rank(&hint, r, 1), NULL);
        ocrAddDependence(block, edt, 0, DB_MODE_RO);
        ocrAddDependence(block, edt, 1, DB_MODE_CONST);
    }
    return NULL_GUID;
}

static ocrGuid_t done(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrPrintf("readers on %llu rank(s) saw each version of the block\n", (unsigned long long)rank_count());
    ocrShutdown();
    return NULL_GUID;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrGuid_t block, readers_tpl, rewrite_tpl, done_tpl, first, second, writer, finisher, out1, out2, out3;
    u64* words;
    ocrDbCreate(&block, (void**)&words, WORDS * sizeof(u64), DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    for (u32 i = 0; i < WORDS; ++i) words[i] = 7 + i;
    ocrDbRelease(block);
    ocrEdtTemplateCreate(&readers_tpl, readers, 2, 1);
    ocrEdtTemplateCreate(&rewrite_tpl, rewrite, 0, 2);
    ocrEdtTemplateCreate(&done_tpl, done, 0, 1);
    u64 p1[2] = {(u64)block.guid, 7}, p2[2] = {(u64)block.guid, 1000};
    /* first readers -> rewrite -> second readers -> done */
    ocrEdtCreate(&first, readers_tpl, 2, p1, 1, NULL, EDT_PROP_FINISH, NULL_HINT, &out1);
    ocrEdtCreate(&writer, rewrite_tpl, 0, NULL, 2, NULL, EDT_PROP_NONE, NULL_HINT, &out2);
    ocrEdtCreate(&second, readers_tpl, 2, p2, 1, NULL, EDT_PROP_FINISH, NULL_HINT, &out3);
    ocrEdtCreate(&finisher, done_tpl, 0, NULL, 1, &out3, EDT_PROP_NONE, NULL_HINT, NULL);
    ocrAddDependence(out2, second, 0, DB_MODE_NULL);
    ocrAddDependence(block, writer, 0, DB_MODE_RW);
    ocrAddDependence(out1, writer, 1, DB_MODE_NULL);
    ocrAddDependence(NULL_GUID, first, 0, DB_MODE_NULL);
    return NULL_GUID;
}
