// SPDX-License-Identifier: MIT
// Program-wide calls: shutdown, abort, printing, argc/argv, hints, affinities.
#include <unistd.h>
#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <vector>

#include "core/log.hpp"
#include "dist/api.hpp"
#include "ocr/extensions/ocr-affinity.h"
#include "ocr/ocr.h"
#include "state.hpp"

using namespace strata::ocr;

std::optional<u64> strata::ocr::hint_priority(const ocrHint_t* hint) noexcept {
    if (hint == nullptr || hint->type != OCR_HINT_EDT_T ||
        (hint->propMask & (u64{1} << static_cast<unsigned>(OCR_HINT_EDT_PRIORITY))) == 0) {
        return std::nullopt;
    }
    return hint->values[OCR_HINT_EDT_PRIORITY];
}

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

namespace {

[[gnu::format(printf, 1, 0)]] u32 print_formatted(const char* fmt, va_list args) {
    va_list copy;
    va_copy(copy, args);
    const int length = std::vsnprintf(nullptr, 0, fmt, copy);
    va_end(copy);
    if (length < 0) {
        return 0;
    }
    std::vector<char> buffer(static_cast<std::size_t>(length) + 1);
    std::vsnprintf(buffer.data(), buffer.size(), fmt, args);
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

}  // namespace

// ocrPrintf and PRINTF pass the caller's format on: the OCR API declares them
// without a format attribute (ocr-std.h), so clang cannot check it here.
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wformat-nonliteral"
#endif
u32 ocrPrintf(const char* fmt, ...) {
    va_list args;
    va_start(args, fmt);
    const u32 length = print_formatted(fmt, args);
    va_end(args);
    return length;
}

u32 PRINTF(const char* fmt, ...) {
    va_list args;
    va_start(args, fmt);
    const u32 length = print_formatted(fmt, args);
    va_end(args);
    return length;
}
#if defined(__clang__)
#pragma clang diagnostic pop
#endif

// The argument block: argc, then argc offsets from the block's start, then the strings.
u64 ocrGetArgc(void* dbPtr) {
    return static_cast<u64*>(dbPtr)[0];
}

char* ocrGetArgv(void* dbPtr, u64 count) {
    return static_cast<char*>(dbPtr) + static_cast<u64*>(dbPtr)[1 + count];
}

u64 getArgc(void* dbPtr) {
    return ocrGetArgc(dbPtr);
}

char* getArgv(void* dbPtr, u64 count) {
    return ocrGetArgv(dbPtr, count);
}

u8 ocrHintInit(ocrHint_t* hint, ocrHintType_t hintType) {
    if (hint == nullptr) {
        return OCR_EINVAL;
    }
    *hint = ocrHint_t{};
    hint->type = hintType;
    return 0;
}

u8 ocrSetHintValue(ocrHint_t* hint, ocrHintProp_t hintProp, ocrHintVal_t value) {
    if (hint == nullptr || hintProp >= OCR_HINT_GROUP_PROP_END) {
        return OCR_EINVAL;
    }
    hint->propMask |= u64{1} << static_cast<unsigned>(hintProp);
    hint->values[hintProp] = value;
    return 0;
}

u8 ocrUnsetHintValue(ocrHint_t* hint, ocrHintProp_t hintProp) {
    if (hint == nullptr || hintProp >= OCR_HINT_GROUP_PROP_END) {
        return OCR_EINVAL;
    }
    hint->propMask &= ~(u64{1} << static_cast<unsigned>(hintProp));
    return 0;
}

u8 ocrGetHintValue(ocrHint_t* hint, ocrHintProp_t hintProp, ocrHintVal_t* value) {
    if (hint == nullptr || value == nullptr || hintProp >= OCR_HINT_GROUP_PROP_END) {
        return OCR_EINVAL;
    }
    if ((hint->propMask & (u64{1} << static_cast<unsigned>(hintProp))) == 0) {
        return OCR_ENOENT;
    }
    *value = hint->values[hintProp];
    return 0;
}

u8 ocrHintSetValue(ocrHint_t* hint, ocrHintProp_t hintProp, ocrHintVal_t value) {
    return ocrSetHintValue(hint, hintProp, value);
}

u8 ocrHintUnsetValue(ocrHint_t* hint, ocrHintProp_t hintProp) {
    return ocrUnsetHintValue(hint, hintProp);
}

u8 ocrHintGetValue(ocrHint_t* hint, ocrHintProp_t hintProp, ocrHintVal_t* value) {
    return ocrGetHintValue(hint, hintProp, value);
}

// The priority reaches an EDT still waiting for dependences (a runnable one
// has left the GUID table: too late, as in the reference) or a template.
u8 ocrSetHint(ocrGuid_t guid, ocrHint_t* hint) {
    if (hint == nullptr) {
        return OCR_EINVAL;
    }
    OcrState* s = state();
    const auto priority = hint_priority(hint);
    if (s == nullptr || !priority) {
        return 0;
    }
    if (auto edt = s->table.find_as<Edt>(guid, Kind::edt)) {
        edt->priority.assign(*priority);
    } else if (auto tpl = s->table.find_as<EdtTemplate>(guid, Kind::edt_template)) {
        tpl->priority.assign(*priority);
    }
    return 0;
}

u8 ocrGetHint(ocrGuid_t guid, ocrHint_t* hint) {
    if (hint == nullptr) {
        return OCR_EINVAL;
    }
    OcrState* s = state();
    if (s == nullptr || hint->type != OCR_HINT_EDT_T) {
        return 0;
    }
    std::optional<u64> priority;
    if (auto edt = s->table.find_as<Edt>(guid, Kind::edt)) {
        priority = edt->priority.get();
    } else if (auto tpl = s->table.find_as<EdtTemplate>(guid, Kind::edt_template)) {
        priority = tpl->priority.get();
    }
    if (priority) {
        (void)ocrSetHintValue(hint, OCR_HINT_EDT_PRIORITY, *priority);
    }
    return 0;
}

// One affinity per rank (policy domain): a GUID naming the rank (state.hpp).
// AFFINITY_PD and AFFINITY_PD_MASTER list every rank; AFFINITY_CURRENT this one.
u8 ocrAffinityCount(ocrAffinityKind kind, u64* count) {
    if (count == nullptr) {
        return OCR_EINVAL;
    }
    *count = kind == AFFINITY_CURRENT ? 1 : static_cast<u64>(dist::ranks());
    return 0;
}

u8 ocrAffinityGet(ocrAffinityKind kind, u64* count, ocrGuid_t* affinities) {
    if (count == nullptr || affinities == nullptr || *count < 1) {
        return OCR_EINVAL;
    }
    if (kind == AFFINITY_CURRENT) {
        *count = 1;
        affinities[0] = affinity_of(dist::rank());
        return 0;
    }
    const u64 n = std::min<u64>(*count, static_cast<u64>(dist::ranks()));
    for (u64 i = 0; i < n; ++i) {
        affinities[i] = affinity_of(static_cast<int>(i));
    }
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
    if (affinity == nullptr) {
        return OCR_EINVAL;
    }
    *affinity = affinity_of(dist::rank());
    return 0;
}

// The rank that owns an object: where an EDT runs, where a data block lives.
u8 ocrAffinityQuery(ocrGuid_t guid, u64* count, ocrGuid_t* affinities) {
    if (count != nullptr) {
        *count = 1;
    }
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
    return s != nullptr && s->runtime ? static_cast<u64>(s->runtime->workers()) : 1;
}

}  // extern "C"
