// Program-wide calls: shutdown, abort, printing, argc/argv, hints, affinities.
#include <unistd.h>
#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "core/log.hpp"
#include "dist/api.hpp"
#include "ocr/extensions/ocr-affinity.h"
#include "ocr/ocr.h"
#include "state.hpp"

using namespace strata::ocr;

extern "C" {

void(ocrShutdown)(void) {
    (void)take_call_site();
    if (OcrState* s = state()) {
        s->finish(0);
    }
}

void(ocrAbort)(u8 errorCode) {
    const CallSite site = take_call_site();
    if (OcrState* s = state()) {
        {
            std::lock_guard lock(s->print_mutex);
            std::fflush(stdout);
            fmt::print(stderr, "strata-ocr: {}: ocrAbort({})\n", site.str(), errorCode);
        }
        s->finish(errorCode);
    }
}

u32 ocrPrintf(const char* fmt, ...) {
    va_list args;
    va_start(args, fmt);
    va_list copy;
    va_copy(copy, args);
    const int length = std::vsnprintf(nullptr, 0, fmt, copy);
    va_end(copy);
    if (length < 0) {
        va_end(args);
        return 0;
    }
    std::vector<char> buffer(static_cast<std::size_t>(length) + 1);
    std::vsnprintf(buffer.data(), buffer.size(), fmt, args);
    va_end(args);
    OcrState* s = state();
    if (s != nullptr) {
        s->print_mutex.lock();
    }
    std::fwrite(buffer.data(), 1, static_cast<std::size_t>(length), stdout);
    std::fflush(stdout);
    if (s != nullptr) {
        s->print_mutex.unlock();
    }
    return static_cast<u32>(length);
}

// The argument block: argc, then argc offsets from the block's start, then the strings.
u64 ocrGetArgc(void* dbPtr) {
    return static_cast<u64*>(dbPtr)[0];
}

char* ocrGetArgv(void* dbPtr, u64 count) {
    return static_cast<char*>(dbPtr) + static_cast<u64*>(dbPtr)[1 + count];
}

u8 ocrHintInit(ocrHint_t* hint, ocrHintType_t hintType) {
    if (hint == nullptr) return OCR_EINVAL;
    *hint = ocrHint_t{};
    hint->type = hintType;
    return 0;
}

u8 ocrSetHintValue(ocrHint_t* hint, ocrHintProp_t hintProp, ocrHintVal_t value) {
    if (hint == nullptr || hintProp >= OCR_HINT_GROUP_PROP_END) return OCR_EINVAL;
    hint->propMask |= u64{1} << static_cast<unsigned>(hintProp);
    hint->values[hintProp] = value;
    return 0;
}

u8 ocrUnsetHintValue(ocrHint_t* hint, ocrHintProp_t hintProp) {
    if (hint == nullptr || hintProp >= OCR_HINT_GROUP_PROP_END) return OCR_EINVAL;
    hint->propMask &= ~(u64{1} << static_cast<unsigned>(hintProp));
    return 0;
}

u8 ocrGetHintValue(ocrHint_t* hint, ocrHintProp_t hintProp, ocrHintVal_t* value) {
    if (hint == nullptr || value == nullptr || hintProp >= OCR_HINT_GROUP_PROP_END) return OCR_EINVAL;
    if ((hint->propMask & (u64{1} << static_cast<unsigned>(hintProp))) == 0) return OCR_ENOENT;
    *value = hint->values[hintProp];
    return 0;
}

u8 ocrSetHint(ocrGuid_t /*guid*/, ocrHint_t* /*hint*/) {
    return 0;
}

u8 ocrGetHint(ocrGuid_t /*guid*/, ocrHint_t* hint) {
    return hint == nullptr ? OCR_EINVAL : ocrHintInit(hint, hint->type);
}

// One affinity per rank (policy domain): a GUID naming the rank (state.hpp).
// AFFINITY_PD and AFFINITY_PD_MASTER list every rank; AFFINITY_CURRENT this one.
u8 ocrAffinityCount(ocrAffinityKind kind, u64* count) {
    if (count == nullptr) return OCR_EINVAL;
    *count = kind == AFFINITY_CURRENT ? 1 : static_cast<u64>(dist::ranks());
    return 0;
}

u8 ocrAffinityGet(ocrAffinityKind kind, u64* count, ocrGuid_t* affinities) {
    if (count == nullptr || affinities == nullptr || *count < 1) return OCR_EINVAL;
    if (kind == AFFINITY_CURRENT) {
        *count = 1;
        affinities[0] = affinity_of(dist::rank());
        return 0;
    }
    const u64 n = std::min<u64>(*count, static_cast<u64>(dist::ranks()));
    for (u64 i = 0; i < n; ++i) affinities[i] = affinity_of(static_cast<int>(i));
    *count = n;
    return 0;
}

u8 ocrAffinityGetAt(ocrAffinityKind kind, u64 idx, ocrGuid_t* affinity) {
    const u64 count = kind == AFFINITY_CURRENT ? 1 : static_cast<u64>(dist::ranks());
    if (affinity == nullptr || idx >= count) {
        strata::detail::log().warn("strata-ocr: ocrAffinityGetAt(idx={}): the job has {} affinit{} of this kind", idx,
                                   count, count == 1 ? "y" : "ies");
        return OCR_EINVAL;
    }
    *affinity = affinity_of(kind == AFFINITY_CURRENT ? dist::rank() : static_cast<int>(idx));
    return 0;
}

u8 ocrAffinityGetCurrent(ocrGuid_t* affinity) {
    if (affinity == nullptr) return OCR_EINVAL;
    *affinity = affinity_of(dist::rank());
    return 0;
}

// The rank that owns an object: where an EDT runs, where a data block lives.
u8 ocrAffinityQuery(ocrGuid_t guid, u64* count, ocrGuid_t* affinities) {
    if (count != nullptr) *count = 1;
    if (affinities != nullptr) {
        const bool object = guid.guid > 0 && (id_of(guid) & 7U) != affinity_kind;
        affinities[0] = affinity_of(object ? owner_of(guid) : dist::rank());
    }
    return 0;
}

u64 ocrAffinityToHintValue(ocrGuid_t affinity) {
    return static_cast<u64>(affinity.guid);
}

u64 ocrNbWorkers(void) {
    OcrState* s = state();
    return s != nullptr && s->runtime ? s->runtime->cpus().size() : 1;
}

}  // extern "C"
