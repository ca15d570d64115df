/* SPDX-License-Identifier: MIT */
/* EDT templates, EDTs and dependences. */
#ifndef STRATA_OCR_EDT_H
#define STRATA_OCR_EDT_H

#include "ocr-event.h"
#include "ocr-types.h"
#include "ocr-version.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A template: the function and its default parameter and dependence counts
 *  (EDT_PARAM_UNK: given at ocrEdtCreate). Destroying it while EDTs made from
 *  it are pending is allowed. */
u8 ocrEdtTemplateCreate_internal(ocrGuid_t* guid, ocrEdt_t funcPtr, u32 paramc, u32 depc, const char* funcName);
u8 ocrEdtTemplateDestroy(ocrGuid_t guid);

/** Creates an EDT. depv may be NULL or hold GUIDs (events, data blocks,
 *  NULL_GUID) or UNINITIALIZED_GUID for slots connected later with
 *  ocrAddDependence. The EDT runs once every slot is satisfied, possibly
 *  before this call returns. outputEvent may be NULL; otherwise it receives a
 *  ONCE event satisfied with the EDT's return value (for EDT_PROP_FINISH:
 *  when the EDT and every EDT created inside it completed, with NULL_GUID),
 *  or with EDT_PROP_OEVT_VALID it holds the caller's event to satisfy. */
u8 ocrEdtCreate(ocrGuid_t* guid, ocrGuid_t templateGuid, u32 paramc, u64* paramv, u32 depc, ocrGuid_t* depv,
                u16 properties, ocrHint_t* hint, ocrGuid_t* outputEvent);
/** Destroys an EDT that is not runnable yet. */
u8 ocrEdtDestroy(ocrGuid_t guid);

/** Connects source (an event, a data block or NULL_GUID) to slot `slot` of
 *  destination (an EDT or an event). A data block or NULL_GUID satisfies the
 *  slot at once; an event satisfies it when it fires (at once if it already
 *  did and stays satisfied). */
u8 ocrAddDependence(ocrGuid_t source, ocrGuid_t destination, u32 slot, ocrDbAccessMode_t mode);

/** ocrAddDependence from post-slot `sslot` of source: a collective event's
 *  contributor `sslot` (extensions/ocr-reduction-event.h); for other sources
 *  sslot must be 0 and this is ocrAddDependence. */
u8 ocrAddDependenceSlot(ocrGuid_t source, u32 sslot, ocrGuid_t destination, u32 dslot, ocrDbAccessMode_t mode);

/** The GUID of the EDT running on this thread (NULL_GUID outside EDTs). */
u8 ocrCurrentEdtGet(ocrGuid_t* edt);

#ifndef STRATA_OCR_NO_CALL_SITES
#define ocrEdtTemplateCreate(guid, funcPtr, paramc, depc) \
    STRATA_OCR_AT(ocrEdtTemplateCreate_internal(guid, funcPtr, paramc, depc, #funcPtr))
#define ocrEdtTemplateDestroy(...) STRATA_OCR_AT(ocrEdtTemplateDestroy(__VA_ARGS__))
#define ocrEdtCreate(...) STRATA_OCR_AT(ocrEdtCreate(__VA_ARGS__))
#define ocrEdtDestroy(...) STRATA_OCR_AT(ocrEdtDestroy(__VA_ARGS__))
#define ocrAddDependence(...) STRATA_OCR_AT(ocrAddDependence(__VA_ARGS__))
#define ocrAddDependenceSlot(...) STRATA_OCR_AT(ocrAddDependenceSlot(__VA_ARGS__))
#else
#define ocrEdtTemplateCreate(guid, funcPtr, paramc, depc) \
    ocrEdtTemplateCreate_internal(guid, funcPtr, paramc, depc, #funcPtr)
#endif

#ifdef __cplusplus
}
#endif

#endif /* STRATA_OCR_EDT_H */
