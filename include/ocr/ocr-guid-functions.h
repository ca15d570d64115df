/* SPDX-License-Identifier: MIT */
/* The reference headers' name for the GUID helpers (ocr-guid.h). */
#ifndef STRATA_OCR_GUID_FUNCTIONS_H
#define STRATA_OCR_GUID_FUNCTIONS_H

#include "ocr-guid.h"

#endif /* STRATA_OCR_GUID_FUNCTIONS_H */
