/* SPDX-License-Identifier: MIT */
/* Labeled GUIDs (OCR 1.2 extension, ENABLE_EXTENSION_LABELING): GUIDs the
 * program computes from an index or a tuple before the object exists, so
 * EDTs that never talked can name the same event.
 *
 *   ocrGuidRangeCreate(&range, n, GUID_USER_EVENT_STICKY);
 *   ocrGuidFromIndex(&evt, range, i);
 *   ocrEventCreate(&evt, OCR_EVENT_STICKY_T, GUID_PROP_IS_LABELED);  // creates it at that GUID
 *
 * Creating at a labeled GUID: GUID_PROP_IS_LABELED alone creates it (an object
 * already there is an error the caller sees, OCR_EGUIDEXISTS, rather than the
 * reference's undefined behaviour); GUID_PROP_CHECK returns OCR_EGUIDEXISTS
 * when another creator won the race; GUID_PROP_BLOCK waits until the object
 * there is destroyed, then creates it. ocrEventCreate(Params), ocrEdtCreate and
 * ocrDbCreate take these properties. Thread-safe: any EDT may call these. */
#ifndef STRATA_OCR_LABELING_H
#define STRATA_OCR_LABELING_H

#include "../ocr-types.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The kind of object a range or map holds (values as in the reference). */
typedef enum {
    GUID_USER_NONE = 0,
    GUID_USER_DB = 2,
    GUID_USER_EDT = 3,
    GUID_USER_EDT_TEMPLATE = 4,
    GUID_USER_EVENT_ONCE = 17,
    GUID_USER_EVENT_COUNTED = 18,
    GUID_USER_EVENT_IDEM = 19,
    GUID_USER_EVENT_STICKY = 21,
    GUID_USER_EVENT_LATCH = 22,
    GUID_USER_EVENT_CHANNEL = 23,
    GUID_USER_EVENT_COLLECTIVE = 24
} ocrGuidUserKind;

/** Reserves numberGuid GUIDs of `kind`; *rangeGuid names the range. */
u8 ocrGuidRangeCreate(ocrGuid_t* rangeGuid, u64 numberGuid, ocrGuidUserKind kind);
/** Reserves numberGuid GUIDs named through mapFunc(startGuid, skipGuid,
 *  params, tuple), which must return startGuid advanced by an index below
 *  numberGuid (addValueToGuid(startGuid, index * skipGuid)). params (numParams
 *  values) are copied. */
u8 ocrGuidMapCreate(ocrGuid_t* mapGuid, u32 numParams,
                    ocrGuid_t (*mapFunc)(ocrGuid_t startGuid, u64 skipGuid, s64* params, s64* tuple), s64* params,
                    u64 numberGuid, ocrGuidUserKind kind);
/** The map ocrGuidFromLabel uses with mapGuid NULL_GUID. */
u8 ocrGuidMapSetDefaultMap(u32 numParams,
                           ocrGuid_t (*mapFunc)(ocrGuid_t startGuid, u64 skipGuid, s64* params, s64* tuple),
                           s64* params, u64 numberGuid, ocrGuidUserKind kind);
/** Forgets a range or map; objects created at its GUIDs stay. */
u8 ocrGuidMapDestroy(ocrGuid_t mapGuid);
/** The GUID of index idx of a range (OCR_EINVAL: not a range, or idx out of it). */
u8 ocrGuidFromIndex(ocrGuid_t* outGuid, ocrGuid_t rangeGuid, u64 idx);
/** The GUID a map gives a tuple (OCR_EINVAL: not a map, or outside its range). */
u8 ocrGuidFromLabel(ocrGuid_t* outGuid, ocrGuid_t mapGuid, s64* tuple);
/** The kind of a live object's GUID, GUID_USER_NONE when nothing lives there. */
u8 ocrGetGuidKind(ocrGuidUserKind* outKind, ocrGuid_t guid);
/** guid advanced by `value` positions of a range or map (for map functions). */
ocrGuid_t addValueToGuid(ocrGuid_t input, u64 value);

#ifdef __cplusplus
}
#endif

#endif /* STRATA_OCR_LABELING_H */
