/* SPDX-License-Identifier: MIT */
/* Normal and external tasks in one OCR DAG (docs/external.md).
 *
 *   external_dag <n>                  the DAG below; exit 0 when every result is right
 *   external_dag hold <k> <seconds>   k external `sleep <seconds>` that never end (the signal test)
 *
 * The programs come from the configuration file (tests/ocr/apps/external_dag.toml)
 * named by STRATA_EXTERNAL_CONFIG or `strata ocr --external-config FILE`.
 *
 *   numbers (EDT) --> [sort] sort -n -------------------------------+
 *        |                                                          |
 *        +-------> [sum]  awk sum ----------------------------------+
 *   count (EDT) --> [seq]  seq n/2 --> [sum] awk sum ----------------+--> check (EDT)
 *   abc (EDT) ----> [sha256] sha256sum -----------------------------+
 *                   [fail] exits 3 (output NULL_GUID, status tested)+
 *
 * Known results, none computed by strata: sort gives 1..n in order, the sums
 * are n(n+1)/2 and m(m+1)/2 with m = n/2, SHA-256("abc") is the FIPS 180-2
 * example value, and the failing program's output event carries NULL_GUID
 * with ocrExternalTaskStatus() saying "exited with 3". ocrShutdown when all
 * hold, else ocrAbort(1); bad usage ocrAbort(2). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extensions/ocr-db-info.h"
#include "extensions/ocr-external.h"
#include "ocr.h"

static const char abc_sha256[] = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

enum { IN_SORTED, IN_SUM, IN_SUM_OF_SEQ, IN_DIGEST, IN_FAILED, CHECK_INPUTS };
enum { P_N, P_SORT_TASK, P_FAIL_TASK, CHECK_PARAMS };

static ocrGuid_t guid_from(u64 value) {
    ocrGuid_t g;
    g.guid = (intptr_t)value;
    return g;
}

/* A data block holding `size` bytes of `bytes`. */
static ocrGuid_t block_of(const void* bytes, u64 size) {
    ocrGuid_t db;
    void* p = NULL;
    ocrDbCreate(&db, &p, size, DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    memcpy(p, bytes, size);
    return db;
}

/* The numbers 1..n, one per line, in the order i*7919 mod n (a permutation when 7919 does not divide n). */
static ocrGuid_t make_numbers(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    u64 n = paramv[0];
    char* text = malloc(n * 21 + 1);
    u64 used = 0;
    for (u64 i = 0; i < n; ++i) used += (u64)sprintf(text + used, "%llu\n", (unsigned long long)(i * 7919 % n + 1));
    ocrGuid_t db = block_of(text, used);
    free(text);
    return db;
}

/* m = n/2 as a native s64: [arg:int:K] reads 8-byte blocks as one. */
static ocrGuid_t make_count(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    s64 m = (s64)(paramv[0] / 2);
    return block_of(&m, sizeof m);
}

static ocrGuid_t make_abc(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    return block_of("abc", 3);
}

/* A block's bytes as a NUL-terminated string (malloc'd), or NULL for NULL_GUID. */
static char* text_of(ocrEdtDep_t dep) {
    u64 size = 0;
    if (ocrGuidIsNull(dep.guid) || ocrDbGetSize(dep.guid, &size) != 0) return NULL;
    char* text = malloc(size + 1);
    memcpy(text, dep.ptr, size);
    text[size] = '\0';
    return text;
}

static int expect_number(const char* what, const char* text, unsigned long long want) {
    unsigned long long got = text != NULL ? strtoull(text, NULL, 10) : 0;
    ocrPrintf("%s: %llu (expected %llu)\n", what, got, want);
    return text != NULL && got == want;
}

static ocrGuid_t check(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    u64 n = paramv[P_N], m = n / 2;
    int ok = 1;

    char* sorted = text_of(depv[IN_SORTED]);
    u64 wrong_line = 0;
    const char* at = sorted;
    for (u64 i = 1; at != NULL && i <= n && wrong_line == 0; ++i) {
        char* end = NULL;
        if (strtoull(at, &end, 10) != i || *end != '\n') wrong_line = i;
        at = end + 1;
    }
    if (sorted == NULL || wrong_line != 0 || *at != '\0') {
        ocrPrintf("sort: wrong at line %llu\n", (unsigned long long)wrong_line);
        ok = 0;
    } else {
        ocrPrintf("sort: 1..%llu in order\n", (unsigned long long)n);
    }
    ocrExternalStatus_t st;
    ocrExternalTaskStatus(guid_from(paramv[P_SORT_TASK]), &st);
    ok &= st.state == OCR_EXTERNAL_OK && st.exitCode == 0;

    char* sum = text_of(depv[IN_SUM]);
    char* sum_of_seq = text_of(depv[IN_SUM_OF_SEQ]);
    char* digest = text_of(depv[IN_DIGEST]);
    ok &= expect_number("sum of the numbers", sum, (unsigned long long)(n * (n + 1) / 2));
    ok &= expect_number("sum of seq n/2", sum_of_seq, (unsigned long long)(m * (m + 1) / 2));
    int digest_ok = digest != NULL && strncmp(digest, abc_sha256, 64) == 0;
    ocrPrintf("sha256(abc): %.64s (%s)\n", digest != NULL ? digest : "(no output)", digest_ok ? "right" : "WRONG");
    ok &= digest_ok;

    /* How an OCR program tests an external task's failure: the output event
     * carried NULL_GUID, and the task's status says why. */
    ocrExternalTaskStatus(guid_from(paramv[P_FAIL_TASK]), &st);
    int failed_ok = ocrGuidIsNull(depv[IN_FAILED].guid) && st.state == OCR_EXTERNAL_EXIT && st.exitCode == 3;
    ocrPrintf("failing program: output %s, state %d, exit code %d (%s)\n",
              ocrGuidIsNull(depv[IN_FAILED].guid) ? "NULL_GUID" : "a block", (int)st.state, (int)st.exitCode,
              failed_ok ? "as expected" : "WRONG");
    ok &= failed_ok;

    free(sorted);
    free(sum);
    free(sum_of_seq);
    free(digest);
    for (u32 i = 0; i < depc; ++i) {
        if (!ocrGuidIsNull(depv[i].guid)) ocrDbDestroy(depv[i].guid);
    }
    ocrPrintf("external_dag: %s\n", ok ? "every result is right" : "FAILED");
    if (ok) {
        ocrShutdown();
    } else {
        ocrAbort(1);
    }
    return NULL_GUID;
}

/* An external task of `name` with the given inputs (events or blocks, may be
 * NULL_GUID for "added later") and one output; returns the output event. */
static ocrGuid_t external(const char* name, u32 nin, ocrGuid_t* inputs, ocrGuid_t* task) {
    ocrGuid_t tpl, out;
    if (ocrExternalTemplateCreate(&tpl, name, nin, 1) != 0) {
        ocrAbort(2);
        return NULL_GUID;
    }
    /* A task without inputs starts at its creation and may end before the
     * check EDT depends on its output: a ONCE event would be gone by then
     * (seen as "not ... a live event" when `fail` ended in 1 ms), so that
     * output is a STICKY event, which stays satisfied. */
    ocrEventCreate(&out, nin == 0 ? OCR_EVENT_STICKY_T : OCR_EVENT_ONCE_T, EVT_PROP_TAKES_ARG);
    ocrExternalTaskCreate(task, tpl, nin, inputs, 1, &out);
    ocrExternalTemplateDestroy(tpl);
    return out;
}

/* A normal EDT `fn` with param n, gated so its output event can be connected first. */
static ocrGuid_t maker(ocrEdt_t fn, u64 n, ocrGuid_t* gate_edt) {
    ocrGuid_t tpl, out;
    ocrEdtTemplateCreate(&tpl, fn, 1, 1);
    ocrEdtCreate(gate_edt, tpl, 1, &n, 1, NULL, EDT_PROP_NONE, NULL_HINT, &out);
    ocrEdtTemplateDestroy(tpl);
    return out;
}

static void run_dag(u64 n) {
    ocrGuid_t numbers_edt, count_edt, abc_edt, ignored;
    ocrGuid_t numbers = maker(make_numbers, n, &numbers_edt);
    ocrGuid_t count = maker(make_count, n, &count_edt);
    ocrGuid_t abc = maker(make_abc, n, &abc_edt);

    ocrGuid_t sort_task, fail_task;
    ocrGuid_t in[CHECK_INPUTS];
    in[IN_SORTED] = external("sort", 1, &numbers, &sort_task);
    in[IN_SUM] = external("sum", 1, &numbers, &ignored);
    ocrGuid_t seq_out = external("seq", 1, &count, &ignored);
    in[IN_SUM_OF_SEQ] = external("sum", 1, &seq_out, &ignored);
    in[IN_DIGEST] = external("sha256", 1, &abc, &ignored);
    in[IN_FAILED] = external("fail", 0, NULL, &fail_task);

    ocrGuid_t check_tpl, check_edt;
    u64 params[CHECK_PARAMS];
    params[P_N] = n;
    params[P_SORT_TASK] = (u64)sort_task.guid;
    params[P_FAIL_TASK] = (u64)fail_task.guid;
    ocrEdtTemplateCreate(&check_tpl, check, CHECK_PARAMS, CHECK_INPUTS);
    ocrEdtCreate(&check_edt, check_tpl, CHECK_PARAMS, params, CHECK_INPUTS, in, EDT_PROP_NONE, NULL_HINT, NULL);
    ocrEdtTemplateDestroy(check_tpl);

    /* Everything is connected: let the makers run. */
    ocrAddDependence(NULL_GUID, numbers_edt, 0, DB_MODE_NULL);
    ocrAddDependence(NULL_GUID, count_edt, 0, DB_MODE_NULL);
    ocrAddDependence(NULL_GUID, abc_edt, 0, DB_MODE_NULL);
}

/* Never runs: the held programs end only by a signal, which ends the program too. */
static ocrGuid_t held_sink(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    ocrPrintf("external_dag: a held program ended by itself\n");
    ocrAbort(1);
    return NULL_GUID;
}

/* k programs holding their input file open while they sleep; nothing ends them but a signal. */
static void hold(u64 k, const char* seconds) {
    ocrGuid_t tpl, sink_tpl, sink;
    if (ocrExternalTemplateCreate(&tpl, "hold", 2, 1) != 0) {
        ocrAbort(2);
        return;
    }
    ocrEdtTemplateCreate(&sink_tpl, held_sink, 0, (u32)k);
    ocrEdtCreate(&sink, sink_tpl, 0, NULL, (u32)k, NULL, EDT_PROP_NONE, NULL_HINT, NULL);
    for (u64 i = 0; i < k; ++i) {
        ocrGuid_t out, task, inputs[2];
        inputs[0] = block_of("held", 4);
        inputs[1] = block_of(seconds, strlen(seconds));
        ocrDbRelease(inputs[0]);
        ocrDbRelease(inputs[1]);
        ocrEventCreate(&out, OCR_EVENT_ONCE_T, EVT_PROP_TAKES_ARG);
        ocrAddDependence(out, sink, (u32)i, DB_MODE_RO);
        ocrExternalTaskCreate(&task, tpl, 2, inputs, 1, &out);
    }
    ocrExternalTemplateDestroy(tpl);
    ocrEdtTemplateDestroy(sink_tpl);
    ocrPrintf("external_dag: started %llu programs that sleep %s s\n", (unsigned long long)k, seconds);
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    u64 argc = getArgc(depv[0].ptr);
    if (argc == 2) {
        u64 n = strtoull(getArgv(depv[0].ptr, 1), NULL, 10);
        if (n >= 2 && n % 7919 != 0) {
            run_dag(n);
            return NULL_GUID;
        }
    } else if (argc == 4 && strcmp(getArgv(depv[0].ptr, 1), "hold") == 0) {
        u64 k = strtoull(getArgv(depv[0].ptr, 2), NULL, 10);
        if (k >= 1 && k <= 64) {
            hold(k, getArgv(depv[0].ptr, 3));
            return NULL_GUID;
        }
    }
    ocrPrintf("usage: external_dag <n >= 2, not a multiple of 7919> | external_dag hold <1..64> <seconds>\n");
    ocrAbort(2);
    return NULL_GUID;
}
