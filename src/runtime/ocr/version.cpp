// SPDX-License-Identifier: MIT
// ocr-version.h: the version string's parts and the extension bitmap.
#include "ocr/ocr-version.h"

namespace {

// The `index`-th dot-separated number of `text` (0 when missing or not a number).
u32 part(const u8* text, int index) {
    if (text == nullptr) {
        return 0;
    }
    const u8* p = text;
    for (int dots = 0; dots < index; ++p) {
        if (*p == '\0') {
            return 0;
        }
        if (*p == '.') {
            ++dots;
        }
    }
    u32 value = 0;
    for (; *p >= '0' && *p <= '9'; ++p) {
        value = value * 10 + static_cast<u32>(*p - '0');
    }
    return value;
}

}  // namespace

extern "C" {

u64 ocrVersionExtensionBitmap(void) {
    return OCR_VERSION_LEGACY_BIT | OCR_VERSION_AFFINITY_BIT | OCR_VERSION_PARAMS_EVT_BIT |
           OCR_VERSION_COUNTED_EVT_BIT | OCR_VERSION_RTITF_BIT | OCR_VERSION_PAUSE_BIT | OCR_VERSION_LABELING_BIT;
}

u32 ocrVersionExtractMajor(u8* verstr) {
    return part(verstr, 0);
}

u32 ocrVersionExtractMinor(u8* verstr) {
    return part(verstr, 1);
}

u32 ocrVersionExtractPatch(u8* verstr) {
    return part(verstr, 2);
}

}  // extern "C"
