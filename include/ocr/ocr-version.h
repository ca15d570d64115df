/* SPDX-License-Identifier: MIT */
/* The OCR API version strata's headers follow, and the reference's macros
 * to take a version string apart and to ask which extensions the runtime has
 * (every one of those below, in strata). */
#ifndef STRATA_OCR_VERSION_H
#define STRATA_OCR_VERSION_H

#include "ocr-types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define OCR_MAJOR_VERSION 1
#define OCR_MINOR_VERSION 2
#define OCR_PATCH_VERSION 0

#define strmacro(s) #s
#define tostring(s) strmacro(s)
#define DOT "."
/** "1.2.0" */
#define OCR_VERSION                                             \
    tostring(OCR_MAJOR_VERSION) DOT tostring(OCR_MINOR_VERSION) \
    DOT tostring(OCR_PATCH_VERSION)

/** The parts of a version string such as OCR_VERSION ("1.2.0" gives 1, 2 and 0). */
#define OCR_VERSION_GET_MAJOR(verstr) ocrVersionExtractMajor(verstr)
#define OCR_VERSION_GET_MINOR(verstr) ocrVersionExtractMinor(verstr)
#define OCR_VERSION_GET_PATCH(verstr) ocrVersionExtractPatch(verstr)

/** The extensions the runtime was built with, one bit each (OCR_VERSION_*_BIT). */
#define OCR_VERSION_EXTENSION_BITMAP ocrVersionExtensionBitmap()

#define EXTENSION_LEGACY_BITPOS 1
#define EXTENSION_AFFINITY_BITPOS 2
#define EXTENSION_PARAMS_EVT_BITPOS 3
#define EXTENSION_COUNTED_EVT_BITPOS 4
#define EXTENSION_RTITF_BITPOS 5
#define EXTENSION_PAUSE_BITPOS 6
#define EXTENSION_LABELING_BITPOS 7

#define OCR_VERSION_LEGACY_BIT (1 << EXTENSION_LEGACY_BITPOS)
#define OCR_VERSION_AFFINITY_BIT (1 << EXTENSION_AFFINITY_BITPOS)
#define OCR_VERSION_PARAMS_EVT_BIT (1 << EXTENSION_PARAMS_EVT_BITPOS)
#define OCR_VERSION_COUNTED_EVT_BIT (1 << EXTENSION_COUNTED_EVT_BITPOS)
#define OCR_VERSION_RTITF_BIT (1 << EXTENSION_RTITF_BITPOS)
#define OCR_VERSION_PAUSE_BIT (1 << EXTENSION_PAUSE_BITPOS)
#define OCR_VERSION_LABELING_BIT (1 << EXTENSION_LABELING_BITPOS)

/** OCR 1.1 programs pass a hint where 1.0 ones passed an affinity. */
#define PICK_1_1(hint, affinity) (hint)

u64 ocrVersionExtensionBitmap(void);
/** The number before the first dot, between the dots, after the second (0 if absent). */
u32 ocrVersionExtractMajor(u8* verstr);
u32 ocrVersionExtractMinor(u8* verstr);
u32 ocrVersionExtractPatch(u8* verstr);

#ifdef __cplusplus
}
#endif

#endif /* STRATA_OCR_VERSION_H */
