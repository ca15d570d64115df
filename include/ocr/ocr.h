/* SPDX-License-Identifier: MIT */
/* The OCR 1.2 API as strata provides it (docs/runtime.md): include this and
 * link with -lstrata-ocr, which also provides main() (it runs mainEdt).
 *
 *   cc app.c -I<strata>/include/ocr -L<strata>/lib -lstrata-ocr -o app
 *   ./app args            or            strata ocr ./app args
 *
 * Extensions: include "extensions/ocr-<name>.h" (affinity, hints, labeling,
 * legacy, runtime-itf, db-info, pause; strata's own: external, db-shm,
 * db-checkpoint); docs/runtime.md has the conformance
 * table. OCR_TYPE_H and the ENABLE_EXTENSION_* switches are accepted and
 * change nothing: every extension strata has is always declared. */
#ifndef STRATA_OCR_H
#define STRATA_OCR_H

/* The reference's ocr.h builds the name of its build-options header from
 * OCR_TYPE_H with these; strata has no such header and includes none. */
/* clang-format off: spaces around the '-' would reach the stringified name. */
#define OCR_OPTIONS_STR(x) #x
#define OCR_OPTIONS_FILE_CONC(x) OCR_OPTIONS_STR(ocr - options_##x)
#define OCR_OPTIONS_FILE(x) OCR_OPTIONS_FILE_CONC(x)
/* clang-format on */

#include "extensions/ocr-hints.h"
#include "ocr-db.h"
#include "ocr-edt.h"
#include "ocr-errors.h"
#include "ocr-event.h"
#include "ocr-guid.h"
#include "ocr-std.h"
#include "ocr-types.h"
#include "ocr-version.h"

#endif /* STRATA_OCR_H */
