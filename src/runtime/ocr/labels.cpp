// SPDX-License-Identifier: MIT
// Labeled GUIDs (extensions/ocr-labeling.h): ranges and maps reserve GUID
// numbers; objects are created at them with GUID_PROP_IS_LABELED.
#include <chrono>
#include <thread>

#include "core/log.hpp"
#include "dist/api.hpp"
#include "ocr/extensions/ocr-labeling.h"
#include "ocr/ocr.h"
#include "state.hpp"

namespace strata::ocr {

namespace {

Kind kind_of_user(ocrGuidUserKind kind) {
    switch (kind) {
        case GUID_USER_DB: return Kind::db;
        case GUID_USER_EDT: return Kind::edt;
        case GUID_USER_EDT_TEMPLATE: return Kind::edt_template;
        case GUID_USER_EVENT_ONCE:
        case GUID_USER_EVENT_COUNTED:
        case GUID_USER_EVENT_IDEM:
        case GUID_USER_EVENT_STICKY:
        case GUID_USER_EVENT_LATCH:
        case GUID_USER_EVENT_CHANNEL:
        case GUID_USER_EVENT_COLLECTIVE: return Kind::event;
        case GUID_USER_NONE: break;
    }
    return Kind::none;
}

ocrGuid_t guid_at(const GuidMap& map, std::uint64_t index) {
    return guid_of(map.base | ((map.first + index) << 3) | static_cast<std::uint64_t>(map.object_kind));
}

u8 make_map(ocrGuid_t* out, u64 count, ocrGuidUserKind kind, ocrGuid_t (*function)(ocrGuid_t, u64, s64*, s64*),
            u32 nparams, const s64* params, const char* call) {
    const CallSite site = take_call_site();
    OcrState* s = state();
    const Kind object_kind = kind_of_user(kind);
    if (s == nullptr || out == nullptr || count == 0 || object_kind == Kind::none ||
        (nparams > 0 && params == nullptr)) {
        strata::detail::log().warn(
            "strata-ocr: {}: {}(numberGuid={}, kind={}): {}", site.str(), call, count, static_cast<int>(kind),
            s == nullptr ? "no OCR program is running" : "NULL output, zero GUIDs, an unknown kind or params NULL");
        return OCR_EINVAL;
    }
    auto map = std::make_shared<GuidMap>();
    map->base = s->table.base();
    map->first = s->table.reserve(count);
    map->count = count;
    map->object_kind = object_kind;
    map->function = function;
    if (nparams > 0) {
        map->params.assign(params, params + nparams);
    }
    *out = s->table.insert(std::move(map));
    return 0;
}

std::atomic<std::uint64_t> g_default_map{0};

}  // namespace

u8 insert_labeled(ocrGuid_t guid, u16 properties, const std::shared_ptr<Object>& object) {
    OcrState* s = state();
    // A labeled GUID comes from a range or map of the object's kind; the kind
    // bits say which. (Re-creating at the GUID of an ordinary destroyed object
    // is undefined in OCR; strata lets it happen.)
    if (guid.guid <= 0 || kind_of(guid) != object->kind) {
        return OCR_EINVAL;
    }
    // GUID_PROP_BLOCK: wait until whoever lives there is destroyed. The wait
    // sleeps in the kernel, so the blocking monitor gives the core to another
    // worker meanwhile.
    const bool block = (properties & (GUID_PROP_BLOCK & ~GUID_PROP_IS_LABELED)) != 0;
    while (!s->table.insert_at(guid, object)) {
        if (!block || s->finished()) {
            return OCR_EGUIDEXISTS;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    return 0;
}

}  // namespace strata::ocr

using namespace strata::ocr;

extern "C" {

u8 ocrGuidRangeCreate(ocrGuid_t* rangeGuid, u64 numberGuid, ocrGuidUserKind kind) {
    return make_map(rangeGuid, numberGuid, kind, nullptr, 0, nullptr, "ocrGuidRangeCreate");
}

u8 ocrGuidMapCreate(ocrGuid_t* mapGuid, u32 numParams, ocrGuid_t (*mapFunc)(ocrGuid_t, u64, s64*, s64*), s64* params,
                    u64 numberGuid, ocrGuidUserKind kind) {
    if (mapFunc == nullptr) {
        (void)take_call_site();
        return OCR_EINVAL;
    }
    return make_map(mapGuid, numberGuid, kind, mapFunc, numParams, params, "ocrGuidMapCreate");
}

u8 ocrGuidMapSetDefaultMap(u32 numParams, ocrGuid_t (*mapFunc)(ocrGuid_t, u64, s64*, s64*), s64* params, u64 numberGuid,
                           ocrGuidUserKind kind) {
    ocrGuid_t map;
    if (u8 rc = ocrGuidMapCreate(&map, numParams, mapFunc, params, numberGuid, kind); rc != 0) {
        return rc;
    }
    g_default_map.store(id_of(map), std::memory_order_release);
    return 0;
}

u8 ocrGuidMapDestroy(ocrGuid_t mapGuid) {
    OcrState* s = state();
    if (kind_of(mapGuid) == Kind::guid_map && dist::route_destroy(mapGuid, take_call_site())) {
        return 0;
    }
    if (s == nullptr || kind_of(mapGuid) != Kind::guid_map || !s->table.erase(mapGuid)) {
        return OCR_EINVAL;
    }
    return 0;
}

u8 ocrGuidFromIndex(ocrGuid_t* outGuid, ocrGuid_t rangeGuid, u64 idx) {
    OcrState* s = state();
    auto map = s == nullptr                 ? nullptr
               : dist::is_remote(rangeGuid) ? dist::find_map(rangeGuid)
                                            : s->table.find_as<GuidMap>(rangeGuid, Kind::guid_map);
    if (!map || outGuid == nullptr || idx >= map->count) {
        strata::detail::log().warn("strata-ocr: ocrGuidFromIndex({}, {}): {}", show(rangeGuid), idx,
                                   !map ? "not a live GUID range" : "index out of the range");
        return OCR_EINVAL;
    }
    *outGuid = guid_at(*map, idx);
    return 0;
}

u8 ocrGuidFromLabel(ocrGuid_t* outGuid, ocrGuid_t mapGuid, s64* tuple) {
    OcrState* s = state();
    if (s == nullptr || outGuid == nullptr) {
        return OCR_EINVAL;
    }
    if (ocrGuidIsNull(mapGuid)) {
        mapGuid = guid_of(g_default_map.load(std::memory_order_acquire));
    }
    auto map = dist::is_remote(mapGuid) ? dist::find_map(mapGuid) : s->table.find_as<GuidMap>(mapGuid, Kind::guid_map);
    if (!map || map->function == nullptr) {
        strata::detail::log().warn("strata-ocr: ocrGuidFromLabel({}): not a live GUID map", show(mapGuid));
        return OCR_EINVAL;
    }
    const ocrGuid_t start = guid_at(*map, 0);
    const ocrGuid_t got = map->function(start, 1, map->params.data(), tuple);
    const auto offset = (id_of(got) - id_of(start)) >> 3;
    if (got.guid < start.guid || offset >= map->count || (id_of(got) & 7U) != (id_of(start) & 7U)) {
        strata::detail::log().warn(
            "strata-ocr: ocrGuidFromLabel({}): the map function returned {}, outside its {} GUIDs", show(mapGuid),
            show(got), map->count);
        return OCR_EINVAL;
    }
    *outGuid = got;
    return 0;
}

ocrGuid_t addValueToGuid(ocrGuid_t input, u64 value) {
    return guid_of(id_of(input) + (value << 3));
}

u8 ocrGetGuidKind(ocrGuidUserKind* outKind, ocrGuid_t guid) {
    OcrState* s = state();
    if (s == nullptr || outKind == nullptr) {
        return OCR_EINVAL;
    }
    *outKind = GUID_USER_NONE;
    if (dist::is_remote(guid)) {
        int kind = GUID_USER_NONE;
        const u8 rc = dist::remote_guid_kind(guid, &kind);
        *outKind = static_cast<ocrGuidUserKind>(kind);
        return rc;
    }
    auto object = s->table.find(guid);
    if (!object) {
        return 0;
    }
    switch (object->kind) {
        case Kind::db: *outKind = GUID_USER_DB; break;
        case Kind::edt: *outKind = GUID_USER_EDT; break;
        case Kind::edt_template: *outKind = GUID_USER_EDT_TEMPLATE; break;
        case Kind::event:
            switch (static_cast<Event&>(*object).type) {
                case OCR_EVENT_ONCE_T: *outKind = GUID_USER_EVENT_ONCE; break;
                case OCR_EVENT_IDEM_T: *outKind = GUID_USER_EVENT_IDEM; break;
                case OCR_EVENT_STICKY_T: *outKind = GUID_USER_EVENT_STICKY; break;
                case OCR_EVENT_LATCH_T: *outKind = GUID_USER_EVENT_LATCH; break;
                case OCR_EVENT_COUNTED_T: *outKind = GUID_USER_EVENT_COUNTED; break;
                case OCR_EVENT_CHANNEL_T: *outKind = GUID_USER_EVENT_CHANNEL; break;
                case OCR_EVENT_COLLECTIVE_T: *outKind = GUID_USER_EVENT_COLLECTIVE; break;
                default: break;
            }
            break;
        default: break;
    }
    return 0;
}

}  // extern "C"
