/* SPDX-License-Identifier: MIT */
/* parallel_sum.c: an OCR 1.2 program, unmodified, on strata's task runtime.
 *
 * Build and run against an installed strata (docs/install.md):
 *   cc parallel_sum.c $(pkg-config --cflags --libs strata-ocr) -o parallel_sum
 *   ./parallel_sum 16 100000            # or: strata ocr --stats ./parallel_sum 16 100000
 * or with CMake: find_package(strata CONFIG REQUIRED) and link strata::ocr
 * (examples/CMakeLists.txt). libstrata-ocr provides main(); the program
 * provides mainEdt.
 *
 * mainEdt splits 1..CHUNKS*COUNT into CHUNKS ranges; one EDT per range sums
 * it into a data block and satisfies its event with that block; a reduction
 * EDT that depends on every event adds the blocks up and checks the total
 * against n(n+1)/2. Exit code 0 when it matches, 3 when it does not. */
#include <stdlib.h>
#include <string.h>

#include <ocr.h>

static u64 guid_to_u64(ocrGuid_t g) {
    u64 v;
    memcpy(&v, &g, sizeof v);
    return v;
}

static ocrGuid_t u64_to_guid(u64 v) {
    ocrGuid_t g;
    memcpy(&g, &v, sizeof g);
    return g;
}

/* paramv: first, count, the event to satisfy with the partial sum. */
static ocrGuid_t chunkEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    (void)paramc;
    (void)depc;
    (void)depv;
    u64* partial;
    ocrGuid_t db;
    ocrDbCreate(&db, (void**)&partial, sizeof(u64), DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    *partial = 0;
    for (u64 i = paramv[0]; i < paramv[0] + paramv[1]; ++i) *partial += i;
    ocrDbRelease(db);
    ocrEventSatisfy(u64_to_guid(paramv[2]), db);
    return NULL_GUID;
}

/* paramv: n; depv: one partial sum per chunk. */
static ocrGuid_t reduceEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    (void)paramc;
    const u64 n = paramv[0];
    u64 total = 0;
    for (u32 i = 0; i < depc; ++i) {
        total += *(u64*)depv[i].ptr;
        ocrDbDestroy(depv[i].guid);
    }
    const u64 expected = n * (n + 1) / 2;
    ocrPrintf("sum of 1..%llu over %u EDTs = %llu (expected %llu)\n", (unsigned long long)n, (unsigned)depc,
              (unsigned long long)total, (unsigned long long)expected);
    if (total != expected) {
        ocrAbort(3);
    } else {
        ocrShutdown();
    }
    return NULL_GUID;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    (void)paramc;
    (void)paramv;
    (void)depc;
    u64 chunks = 8, count = 100000;
    const u64 argc = ocrGetArgc(depv[0].ptr);
    if (argc > 1) chunks = strtoull(ocrGetArgv(depv[0].ptr, 1), NULL, 10);
    if (argc > 2) count = strtoull(ocrGetArgv(depv[0].ptr, 2), NULL, 10);
    if (chunks < 1 || chunks > 4096 || count < 1) {
        ocrPrintf("usage: parallel_sum [CHUNKS 1..4096] [COUNT >= 1]\n");
        ocrAbort(2);
        return NULL_GUID;
    }

    ocrGuid_t chunk_template, reduce_template, reduce;
    ocrEdtTemplateCreate(&chunk_template, chunkEdt, 3, 0);
    ocrEdtTemplateCreate(&reduce_template, reduceEdt, 1, (u32)chunks);
    ocrGuid_t* events = malloc(chunks * sizeof *events);
    for (u64 i = 0; i < chunks; ++i) ocrEventCreate(&events[i], OCR_EVENT_ONCE_T, EVT_PROP_TAKES_ARG);
    u64 n = chunks * count;
    ocrEdtCreate(&reduce, reduce_template, EDT_PARAM_DEF, &n, EDT_PARAM_DEF, events, EDT_PROP_NONE, NULL_HINT, NULL);
    for (u64 i = 0; i < chunks; ++i) {
        u64 params[3] = {1 + i * count, count, guid_to_u64(events[i])};
        ocrGuid_t chunk;
        ocrEdtCreate(&chunk, chunk_template, EDT_PARAM_DEF, params, EDT_PARAM_DEF, NULL, EDT_PROP_NONE, NULL_HINT,
                     NULL);
    }
    free(events);
    return NULL_GUID;
}
