/* SPDX-License-Identifier: MIT */
/* The OCR API version strata's headers follow. */
#ifndef STRATA_OCR_VERSION_H
#define STRATA_OCR_VERSION_H

#define OCR_MAJOR_VERSION 1
#define OCR_MINOR_VERSION 2
#define OCR_PATCH_VERSION 0
/** "1.2.0" */
#define OCR_VERSION "1.2.0"

#endif /* STRATA_OCR_VERSION_H */
