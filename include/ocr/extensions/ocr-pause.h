/* SPDX-License-Identifier: MIT */
/* Pause, query and resume (OCR 1.2 extension, ENABLE_EXTENSION_PAUSE). */
#ifndef STRATA_OCR_PAUSE_H
#define STRATA_OCR_PAUSE_H

#include "../ocr-types.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Stops EDTs from starting until ocrResume: EDTs already running finish,
 *  runnable ones wait. Returns 1 if this call paused the runtime, 0 if it was
 *  paused already. isBlocking: wait until no other EDT is running (the caller,
 *  if an EDT, excepted). */
u32 ocrPause(bool isBlocking);
/** While paused, OCR_QUERY_READY_EDTS / OCR_QUERY_ALL_EDTS / OCR_QUERY_EVENTS:
 *  a new data block of GUIDs (*result, *size in bytes) the caller destroys;
 *  NULL_GUID when not paused or for other queries. */
ocrGuid_t ocrQuery(ocrQueryType_t query, ocrGuid_t guid, void** result, u32* size, u8 flags);
/** Lets EDTs start again; ignored when not paused. */
void ocrResume(u32 flag);
/** The reference's user-driven fault injection (its resilience builds).
 *  strata has no resilience layer: the call logs a warning and does nothing. */
void ocrInjectFault(void);

#ifdef __cplusplus
}
#endif

#endif /* STRATA_OCR_PAUSE_H */
