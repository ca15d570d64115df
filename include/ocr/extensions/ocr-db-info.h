/* SPDX-License-Identifier: MIT */
/* Data block information (OCR 1.2 extension, ENABLE_EXTENSION_DB_INFO). */
#ifndef STRATA_OCR_DB_INFO_H
#define STRATA_OCR_DB_INFO_H

#include "../ocr-types.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The size in bytes given to ocrDbCreate. OCR_EINVAL: db is not a live data
 *  block; OCR_EACCES: called from an EDT that does not hold it (outside EDTs,
 *  e.g. legacy code, any live block can be asked). */
u8 ocrDbGetSize(ocrGuid_t db, u64* size);

#ifdef __cplusplus
}
#endif

#endif /* STRATA_OCR_DB_INFO_H */
