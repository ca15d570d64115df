/* SPDX-License-Identifier: MIT */
/* GUID helpers (the reference's ocr-guid-functions.h, also under that name). */
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

/* The reference's older spellings, in its form: functions, not macros. */
static inline bool IS_GUID_NULL(ocrGuid_t g) {
    return ocrGuidIsNull(g);
}
static inline bool IS_GUID_UNINITIALIZED(ocrGuid_t g) {
    return ocrGuidIsUninitialized(g);
}
static inline bool IS_GUID_ERROR(ocrGuid_t g) {
    return ocrGuidIsError(g);
}
static inline bool IS_GUID_EQUAL(ocrGuid_t a, ocrGuid_t b) {
    return ocrGuidIsEq(a, b);
}
static inline bool IS_GUID_LESS_THAN(ocrGuid_t a, ocrGuid_t b) {
    return ocrGuidIsLt(a, b);
}

/** a = b (GUIDs may also be assigned with =). */
#define GUID_ASSIGN_VALUE(a, b) ((a) = (b))
/** printf a GUID the older ways: ocrPrintf(GUIDSx, GUIDFS(g)) or (GUIDLx, GUIDFL(g)). */
#define GUIDSx GUIDF
#define GUIDLx GUIDF
#define GUIDFS(g) GUIDA(g)
#define GUIDFL(g) GUIDA(g)
/** Bits of a GUID (GUID_BIT_COUNT). */
#define GUID_SIZE(g) (sizeof(g) * 8)

#ifdef __cplusplus
}
#endif

#endif /* STRATA_OCR_GUID_H */
