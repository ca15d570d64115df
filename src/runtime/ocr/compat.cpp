// SPDX-License-Identifier: MIT
// Calls the reference's public headers declare that strata answers the way
// the reference documents them (issue 26): allocation inside a data block
// (only NO_ALLOC exists), the asynchronous copy it lists as not supported,
// and fault injection, which belongs to its resilience builds.
#include "core/log.hpp"
#include "ocr/extensions/ocr-pause.h"
#include "ocr/ocr.h"
#include "state.hpp"

extern "C" {

u8 ocrDbMalloc(ocrGuid_t /*guid*/, u64 /*size*/, void** addr) {
    if (addr != nullptr) {
        *addr = nullptr;
    }
    return OCR_EINVAL;
}

u8 ocrDbMallocOffset(ocrGuid_t /*guid*/, u64 /*size*/, u64* /*offset*/) {
    return OCR_EINVAL;
}

u8 ocrDbFree(ocrGuid_t /*guid*/, void* /*addr*/) {
    return OCR_EINVAL;
}

u8 ocrDbFreeOffset(ocrGuid_t /*guid*/, u64 /*offset*/) {
    return OCR_EINVAL;
}

u8 ocrDbCopy(ocrGuid_t /*destination*/, u64 /*destinationOffset*/, ocrGuid_t /*source*/, u64 /*sourceOffset*/,
             u64 /*size*/, u64 /*copyType*/, ocrGuid_t* /*completionEvt*/) {
    strata::detail::log().warn("strata-ocr: ocrDbCopy: not supported (OCR_ENOSYS), as in the reference runtime");
    return OCR_ENOSYS;
}

void ocrInjectFault(void) {
    strata::detail::log().warn("strata-ocr: ocrInjectFault: strata has no resilience layer; nothing injected");
}

}  // extern "C"
