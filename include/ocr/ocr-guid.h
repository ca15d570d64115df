/* SPDX-License-Identifier: MIT */
/* GUID helpers. */
#ifndef STRATA_OCR_GUID_H
#define STRATA_OCR_GUID_H

#include "ocr-types.h"

#ifdef __cplusplus
extern "C" {
#endif

static inline bool ocrGuidIsNull(ocrGuid_t g) {
    return g.guid == 0;
}
static inline bool ocrGuidIsUninitialized(ocrGuid_t g) {
    return g.guid == -2;
}
static inline bool ocrGuidIsError(ocrGuid_t g) {
    return g.guid == -1;
}
static inline bool ocrGuidIsEq(ocrGuid_t a, ocrGuid_t b) {
    return a.guid == b.guid;
}
static inline bool ocrGuidIsLt(ocrGuid_t a, ocrGuid_t b) {
    return a.guid < b.guid;
}
static inline bool ocrGuidIsLe(ocrGuid_t a, ocrGuid_t b) {
    return a.guid <= b.guid;
}
static inline bool ocrGuidIsGt(ocrGuid_t a, ocrGuid_t b) {
    return a.guid > b.guid;
}

/* Older spellings. */
#define IS_GUID_NULL(g) ocrGuidIsNull(g)
#define IS_GUID_EQUAL(a, b) ocrGuidIsEq(a, b)
#define IS_GUID_UNINITIALIZED(g) ocrGuidIsUninitialized(g)

#ifdef __cplusplus
}
#endif

#endif /* STRATA_OCR_GUID_H */
