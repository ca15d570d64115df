/* SPDX-License-Identifier: MIT */
/* external_tasks.c: an OCR program whose DAG mixes normal and external tasks.
 *
 *   text (EDT) --+--> [sha256] sha256sum --+
 *                +--> [words]  awk ---------+--> report (EDT)
 *
 * Build and run against an installed strata (docs/getting-started/tasks.md):
 *   cc external_tasks.c $(pkg-config --cflags --libs strata-ocr) -o external_tasks
 *   strata ocr --external-config external_tasks.toml ./external_tasks
 * The two programs start as soon as the text block is ready, see it as a file,
 * and their standard output becomes a data block for the report EDT; no worker
 * thread waits for them. A program that fails gives its output event
 * NULL_GUID, and ocrExternalTaskStatus says why. */
#include <string.h>

#include "extensions/ocr-db-info.h"
#include "extensions/ocr-external.h"
#include "ocr.h"

static const char kText[] = "strata runs existing programs as tasks of an OCR program\n";

static ocrGuid_t make_text(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    (void)paramc, (void)paramv, (void)depc, (void)depv;
    ocrGuid_t db;
    void* p;
    ocrDbCreate(&db, &p, sizeof kText - 1, DB_PROP_NONE, NULL_HINT, NO_ALLOC);
    memcpy(p, kText, sizeof kText - 1);
    return db; /* satisfies the EDT's output event with the block */
}

/* depv: sha256sum's output, awk's output. */
static ocrGuid_t report(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    (void)paramc, (void)paramv, (void)depc;
    if (ocrGuidIsNull(depv[0].guid) || ocrGuidIsNull(depv[1].guid)) {
        ocrPrintf("an external task failed\n");
        ocrAbort(1);
        return NULL_GUID;
    }
    u64 size = 0;
    ocrDbGetSize(depv[1].guid, &size);                              /* a program's output has no NUL */
    ocrPrintf("words:  %.*s", (int)size, (const char*)depv[1].ptr); /* awk prints "10\n" */
    ocrPrintf("sha256: %.64s\n", (const char*)depv[0].ptr);         /* the digest, then the file's path */
    ocrShutdown();
    return NULL_GUID;
}

/* An external task of template `name` reading `input`; returns the event its output satisfies. */
static ocrGuid_t external(const char* name, ocrGuid_t input) {
    ocrGuid_t template, task, output;
    ocrExternalTemplateCreate(&template, name, 1, 1); /* one input, one output */
    ocrEventCreate(&output, OCR_EVENT_ONCE_T, EVT_PROP_TAKES_ARG);
    ocrExternalTaskCreate(&task, template, 1, NULL, 1, &output);
    ocrAddDependence(input, task, 0, DB_MODE_RO);
    return output;
}

ocrGuid_t mainEdt(u32 paramc, u64* paramv, u32 depc, ocrEdtDep_t depv[]) {
    (void)paramc, (void)paramv, (void)depc, (void)depv;
    /* The text EDT waits on one slot until the graph is wired, so its output
     * event (a ONCE event) cannot fire before both external tasks depend on it. */
    ocrGuid_t text_template, text_edt, text;
    ocrEdtTemplateCreate(&text_template, make_text, 0, 1);
    ocrEdtCreate(&text_edt, text_template, 0, NULL, 1, NULL, EDT_PROP_NONE, NULL_HINT, &text);

    ocrGuid_t outputs[2] = {external("sha256", text), external("words", text)};
    ocrGuid_t report_template, report_edt;
    ocrEdtTemplateCreate(&report_template, report, 0, 2);
    ocrEdtCreate(&report_edt, report_template, 0, NULL, 2, outputs, EDT_PROP_NONE, NULL_HINT, NULL);
    ocrAddDependence(NULL_GUID, text_edt, 0, DB_MODE_NULL); /* start */
    return NULL_GUID;
}
