/* SPDX-License-Identifier: MIT */
/* Events. */
#ifndef STRATA_OCR_EVENT_H
#define STRATA_OCR_EVENT_H

#include "ocr-types.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Creates an event of `eventType` (ocr-types.h describes each type). */
u8 ocrEventCreate(ocrGuid_t* guid, ocrEventTypes_t eventType, u16 properties);
/** Like ocrEventCreate, with the parameters COUNTED (nbDeps), CHANNEL and LATCH (counter) take. */
u8 ocrEventCreateParams(ocrGuid_t* guid, ocrEventTypes_t eventType, u16 properties, ocrEventParams_t* params);
u8 ocrEventDestroy(ocrGuid_t guid);
/** Satisfies slot 0 (a LATCH: `slot` is OCR_EVENT_LATCH_DECR_SLOT or _INCR_SLOT)
 *  with a data block or NULL_GUID. */
u8 ocrEventSatisfySlot(ocrGuid_t guid, ocrGuid_t dataGuid, u32 slot);
u8 ocrEventSatisfy(ocrGuid_t guid, ocrGuid_t dataGuid);

#ifndef STRATA_OCR_NO_CALL_SITES
#define ocrEventCreate(...) STRATA_OCR_AT(ocrEventCreate(__VA_ARGS__))
#define ocrEventCreateParams(...) STRATA_OCR_AT(ocrEventCreateParams(__VA_ARGS__))
#define ocrEventDestroy(...) STRATA_OCR_AT(ocrEventDestroy(__VA_ARGS__))
#define ocrEventSatisfySlot(...) STRATA_OCR_AT(ocrEventSatisfySlot(__VA_ARGS__))
#define ocrEventSatisfy(...) STRATA_OCR_AT(ocrEventSatisfy(__VA_ARGS__))
#endif

#ifdef __cplusplus
}
#endif

#endif /* STRATA_OCR_EVENT_H */
