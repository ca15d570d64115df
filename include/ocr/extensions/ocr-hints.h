/* SPDX-License-Identifier: MIT */
/* Hints (OCR 1.2 extension). strata reads the DB placement hints only. */
#ifndef STRATA_OCR_HINTS_H
#define STRATA_OCR_HINTS_H

#include "../ocr-types.h"

#ifdef __cplusplus
extern "C" {
#endif

u8 ocrHintInit(ocrHint_t* hint, ocrHintType_t hintType);
u8 ocrSetHintValue(ocrHint_t* hint, ocrHintProp_t hintProp, ocrHintVal_t value);
u8 ocrUnsetHintValue(ocrHint_t* hint, ocrHintProp_t hintProp);
u8 ocrGetHintValue(ocrHint_t* hint, ocrHintProp_t hintProp, ocrHintVal_t* value);
/** Accepted and ignored: hints are read at creation only. */
u8 ocrSetHint(ocrGuid_t guid, ocrHint_t* hint);
u8 ocrGetHint(ocrGuid_t guid, ocrHint_t* hint);

#ifdef __cplusplus
}
#endif

#endif /* STRATA_OCR_HINTS_H */
