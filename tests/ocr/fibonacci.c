/* SPDX-License-Identifier: MIT */
/* Fibonacci with one EDT per call, ONCE events and data blocks: the result
 * is checked against the iterative value.
 *
 *   cc fibonacci.c -I<strata>/include/ocr -lstrata-ocr -o fibonacci && ./fibonacci 20
 *
 * fib(n) receives, in paramv, the event it must satisfy with a data block
 * holding fib(n). For n >= 2 it creates two events, a sum EDT that waits on
 * both, and the two child EDTs. */
#include <stdlib.h>
#include <string.h>

#include "ocr.h"

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

static ocrGuid_t g_fib_template, g_sum_template;

static ocrGuid_t sumEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    (void)paramc;
    (void)depc;
    u64* a = (u64*)depv[0].ptr;
    u64* b = (u64*)depv[1].ptr;
    u64* sum;
    ocrGuid_t db;
    ocrDbCreate(&db, (void**)&sum, sizeof(u64), DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    *sum = *a + *b;
    ocrDbDestroy(depv[0].guid);
    ocrDbDestroy(depv[1].guid);
    ocrDbRelease(db);
    ocrEventSatisfy(u64_to_guid(paramv[0]), db);
    return NULL_GUID;
}

static ocrGuid_t fibEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    (void)paramc;
    (void)depc;
    (void)depv;
    const u64 n = paramv[0];
    const ocrGuid_t out = u64_to_guid(paramv[1]);
    if (n < 2) {
        u64* value;
        ocrGuid_t db;
        ocrDbCreate(&db, (void**)&value, sizeof(u64), DB_PROP_NONE, NULL_HINT, NO_ALLOC);
        *value = n;
        ocrDbRelease(db);
        ocrEventSatisfy(out, db);
        return NULL_GUID;
    }
    ocrGuid_t left, right, sum, child;
    ocrEventCreate(&left, OCR_EVENT_ONCE_T, EVT_PROP_TAKES_ARG);
    ocrEventCreate(&right, OCR_EVENT_ONCE_T, EVT_PROP_TAKES_ARG);
    u64 sum_params[1] = {paramv[1]};
    ocrGuid_t sum_deps[2] = {left, right};
    ocrEdtCreate(&sum, g_sum_template, EDT_PARAM_DEF, sum_params, EDT_PARAM_DEF, sum_deps, EDT_PROP_NONE, NULL_HINT,
                 NULL);
    u64 p1[2] = {n - 1, guid_to_u64(left)};
    ocrEdtCreate(&child, g_fib_template, EDT_PARAM_DEF, p1, EDT_PARAM_DEF, NULL, EDT_PROP_NONE, NULL_HINT, NULL);
    u64 p2[2] = {n - 2, guid_to_u64(right)};
    ocrEdtCreate(&child, g_fib_template, EDT_PARAM_DEF, p2, EDT_PARAM_DEF, NULL, EDT_PROP_NONE, NULL_HINT, NULL);
    return NULL_GUID;
}

static ocrGuid_t reportEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    (void)paramc;
    (void)depc;
    const u64 n = paramv[0];
    const u64 got = *(u64*)depv[0].ptr;
    u64 a = 0, b = 1;
    for (u64 i = 0; i < n; ++i) {
        const u64 next = a + b;
        a = b;
        b = next;
    }
    ocrPrintf("fib(%llu) = %llu (expected %llu)\n", (unsigned long long)n, (unsigned long long)got,
              (unsigned long long)a);
    ocrDbDestroy(depv[0].guid);
    if (got != a) {
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
    u64 n = 20;
    if (ocrGetArgc(depv[0].ptr) > 1) {
        n = strtoull(ocrGetArgv(depv[0].ptr, 1), NULL, 10);
    }
    ocrEdtTemplateCreate(&g_fib_template, fibEdt, 2, 0);
    ocrEdtTemplateCreate(&g_sum_template, sumEdt, 1, 2);
    ocrGuid_t report_template, result, report, fib;
    ocrEdtTemplateCreate(&report_template, reportEdt, 1, 1);
    ocrEventCreate(&result, OCR_EVENT_ONCE_T, EVT_PROP_TAKES_ARG);
    u64 report_params[1] = {n};
    ocrEdtCreate(&report, report_template, EDT_PARAM_DEF, report_params, EDT_PARAM_DEF, &result, EDT_PROP_NONE,
                 NULL_HINT, NULL);
    u64 fib_params[2] = {n, guid_to_u64(result)};
    ocrEdtCreate(&fib, g_fib_template, EDT_PARAM_DEF, fib_params, EDT_PARAM_DEF, NULL, EDT_PROP_NONE, NULL_HINT, NULL);
    return NULL_GUID;
}
