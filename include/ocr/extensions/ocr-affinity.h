/* SPDX-License-Identifier: MIT */
/* Affinities (OCR 1.2 extension): strata runs one process, one affinity. */
#ifndef STRATA_OCR_AFFINITY_H
#define STRATA_OCR_AFFINITY_H

#include "../ocr-types.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The reference's kinds, in its order (AFFINITY_SIM is its simulator's). */
typedef enum { AFFINITY_CURRENT, AFFINITY_PD, AFFINITY_PD_MASTER, AFFINITY_SIM, AFFINITY_GUID } ocrAffinityKind;

u8 ocrAffinityCount(ocrAffinityKind kind, u64* count);
u8 ocrAffinityGet(ocrAffinityKind kind, u64* count, ocrGuid_t* affinities);
u8 ocrAffinityGetAt(ocrAffinityKind kind, u64 idx, ocrGuid_t* affinity);
u8 ocrAffinityGetCurrent(ocrGuid_t* affinity);
u8 ocrAffinityQuery(ocrGuid_t guid, u64* count, ocrGuid_t* affinities);
u64 ocrNbWorkers(void);
/** The hint value for OCR_HINT_EDT_AFFINITY / OCR_HINT_DB_AFFINITY (accepted, ignored). */
u64 ocrAffinityToHintValue(ocrGuid_t affinity);

#ifdef __cplusplus
}
#endif

#endif /* STRATA_OCR_AFFINITY_H */
