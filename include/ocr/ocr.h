/* SPDX-License-Identifier: MIT */
/* The OCR 1.2 API as strata provides it (docs/runtime.md): include this and
 * link with -lstrata-ocr, which also provides main() (it runs mainEdt).
 *
 *   cc app.c -I<strata>/include/ocr -L<strata>/lib -lstrata-ocr -o app
 *   ./app args            or            strata ocr ./app args
 *
 * Extensions: include "extensions/ocr-<name>.h" (affinity, hints, labeling,
 * legacy, runtime-itf, db-info, pause); docs/runtime.md has the conformance
 * table. OCR_TYPE_H and the ENABLE_EXTENSION_* switches are accepted and
 * change nothing: every extension strata has is always declared. */
#ifndef STRATA_OCR_H
#define STRATA_OCR_H

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
