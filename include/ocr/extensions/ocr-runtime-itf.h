/* SPDX-License-Identifier: MIT */
/* Runtime interface (OCR 1.2 extension, ENABLE_EXTENSION_RTITF): EDT-local
 * storage, worker identity, and telling the runtime that the calling EDT is
 * about to block in legacy code. */
#ifndef STRATA_OCR_RUNTIME_ITF_H
#define STRATA_OCR_RUNTIME_ITF_H

#include "../ocr-types.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Number of ELS slots of an EDT (offsets 0 .. OCR_ELS_USER_SLOTS-1). */
#define OCR_ELS_USER_SLOTS 8

/** The value the running EDT stored at `offset` of its EDT-local storage
 *  (NULL_GUID if none, outside an EDT, or offset out of range). */
ocrGuid_t ocrElsUserGet(u8 offset);
/** Stores `data` at `offset` of the running EDT's local storage; ignored
 *  outside an EDT or for offset >= OCR_ELS_USER_SLOTS. */
void ocrElsUserSet(u8 offset, ocrGuid_t data);
/** The running EDT (NULL_GUID outside EDTs). */
void currentEdtUserGet(ocrGuid_t* guid);
/** Workers that run EDTs side by side: STRATA_WORKERS, else the
 *  configuration file's count (-ocr:cfg, OCR_CONFIG), else one per allowed CPU. */
u64 ocrNbWorkers(void);
/** A GUID naming the calling worker thread; distinct per worker, stable for
 *  the thread's life (NULL_GUID outside the runtime's workers). */
void ocrCurrentWorkerGuid(ocrGuid_t* guid);
/** The calling EDT is about to block in code the runtime cannot see: strata
 *  gives its core to another worker right away (a scheduling point) instead
 *  of waiting for the blocking monitor to notice. Returns 0, or OCR_EINVAL
 *  outside an EDT. */
u8 ocrInformLegacyCodeBlocking(void);

#ifdef __cplusplus
}
#endif

#endif /* STRATA_OCR_RUNTIME_ITF_H */
