/* SPDX-License-Identifier: MIT */
/* Hints (OCR 1.2 extension). strata acts on OCR_HINT_EDT_PRIORITY and the DB
 * placement hints (ocr-types.h). */
#ifndef STRATA_OCR_HINTS_H
#define STRATA_OCR_HINTS_H

#include "../ocr-types.h"

#ifdef __cplusplus
extern "C" {
#endif

u8 ocrHintInit(ocrHint_t* hint, ocrHintType_t hintType);
/** Sets, unsets and reads one property of a hint (OCR_ENOENT: not set). */
u8 ocrHintSetValue(ocrHint_t* hint, ocrHintProp_t hintProp, ocrHintVal_t value);
u8 ocrHintUnsetValue(ocrHint_t* hint, ocrHintProp_t hintProp);
u8 ocrHintGetValue(ocrHint_t* hint, ocrHintProp_t hintProp, ocrHintVal_t* value);
/** The names before OCR 1.2.0 (the reference marks them deprecated; strata
 *  does not, so programs written for either version build with -Werror). */
u8 ocrSetHintValue(ocrHint_t* hint, ocrHintProp_t hintProp, ocrHintVal_t value);
u8 ocrUnsetHintValue(ocrHint_t* hint, ocrHintProp_t hintProp);
u8 ocrGetHintValue(ocrHint_t* hint, ocrHintProp_t hintProp, ocrHintVal_t* value);
/** Sets the hint's properties on an object. OCR_HINT_EDT_PRIORITY on an EDT
 *  that is not runnable yet, or on a template (for the EDTs made from it
 *  afterwards), orders it among ready EDTs; other properties are accepted and
 *  ignored. OCR_EINVAL: no hint. */
u8 ocrSetHint(ocrGuid_t guid, ocrHint_t* hint);
/** Adds the object's hint properties (its priority) to *hint. */
u8 ocrGetHint(ocrGuid_t guid, ocrHint_t* hint);

#ifdef __cplusplus
}
#endif

#endif /* STRATA_OCR_HINTS_H */
