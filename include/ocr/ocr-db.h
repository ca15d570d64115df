/* SPDX-License-Identifier: MIT */
/* Data blocks. */
#ifndef STRATA_OCR_DB_H
#define STRATA_OCR_DB_H

#include "ocr-types.h"
#include "ocr-version.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Creates a data block of `len` bytes, 8-byte aligned, not zeroed. Unless
 *  flags has DB_PROP_NO_ACQUIRE the calling EDT holds it in RW mode and *addr
 *  points at its data until ocrDbRelease or the end of the EDT. The hint's
 *  OCR_HINT_DB_INTER / OCR_HINT_DB_FAR place it in shared memory or on
 *  storage (docs/runtime.md); memory is the default. */
u8 ocrDbCreate(ocrGuid_t* db, void** addr, u64 len, u16 flags, ocrHint_t* hint, ocrInDbAllocator_t allocator);
/** Destroys a data block; its memory goes when the last holder released it.
 *  A holder that destroys it releases it. */
u8 ocrDbDestroy(ocrGuid_t db);
/** Releases the calling EDT's hold early; its writes become visible to EDTs
 *  that depend on what this EDT satisfies afterwards. At most once per EDT. */
u8 ocrDbRelease(ocrGuid_t db);
/** The size in bytes given to ocrDbCreate (also in extensions/ocr-db-info.h). */
u8 ocrDbGetSize(ocrGuid_t db, u64* size);

/* Allocation inside a data block: only NO_ALLOC exists, so these return
 * OCR_EINVAL ("the data block does not support allocation"), as the
 * reference documents them. */
u8 ocrDbMalloc(ocrGuid_t guid, u64 size, void** addr);
u8 ocrDbMallocOffset(ocrGuid_t guid, u64 size, u64* offset);
u8 ocrDbFree(ocrGuid_t guid, void* addr);
u8 ocrDbFreeOffset(ocrGuid_t guid, u64 offset);
/** An asynchronous copy between data blocks: the reference declares it and
 *  documents it as not supported; strata returns OCR_ENOSYS. */
u8 ocrDbCopy(ocrGuid_t destination, u64 destinationOffset, ocrGuid_t source, u64 sourceOffset, u64 size, u64 copyType,
             ocrGuid_t* completionEvt);

#ifndef STRATA_OCR_NO_CALL_SITES
#define ocrDbCreate(...) STRATA_OCR_AT(ocrDbCreate(__VA_ARGS__))
#define ocrDbDestroy(...) STRATA_OCR_AT(ocrDbDestroy(__VA_ARGS__))
#define ocrDbRelease(...) STRATA_OCR_AT(ocrDbRelease(__VA_ARGS__))
#endif

#ifdef __cplusplus
}
#endif

#endif /* STRATA_OCR_DB_H */
