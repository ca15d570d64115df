// SPDX-License-Identifier: MIT
// Events: ONCE, IDEM, STICKY, LATCH, COUNTED, CHANNEL (COLLECTIVE: collective.cpp).
#include "core/log.hpp"
#include "dist/api.hpp"
#include "ocr/ocr.h"
#include "state.hpp"

namespace strata::ocr {

namespace {

void fire(const std::vector<Event::Waiter>& waiters, ocrGuid_t payload) {
    for (const Event::Waiter& w : waiters) {
        deliver(w.destination, w.slot, payload, w.mode, w.site);
    }
}

// A COLLECTIVE event created again at its labeled GUID with the same
// parameters joins it: in the reference's distributed programs every rank
// (every contributor, even) creates the event it contributes to. Not with
// GUID_PROP_CHECK, whose caller asks to learn that it exists.
bool joins_collective(OcrState& s, ocrGuid_t guid, u16 properties, const Event& made) {
    if (!made.collective || (properties & (GUID_PROP_CHECK & ~GUID_PROP_IS_LABELED)) != 0) {
        return false;
    }
    auto existing = s.table.find_as<Event>(guid, Kind::event);
    return existing && existing->collective && same_collective(*existing->collective, *made.collective);
}

}  // namespace

u8 satisfy_event(const std::shared_ptr<Event>& event, ocrGuid_t db, u32 slot, const CallSite& site) {
    OcrState* s = state();
    std::vector<Event::Waiter> waiters;
    std::vector<std::pair<Event::Waiter, ocrGuid_t>> matched;  // CHANNEL
    bool destroy = false;
    {
        std::lock_guard lock(event->mutex);
        switch (event->type) {
            case OCR_EVENT_ONCE_T:
                if (event->satisfied) {
                    return OCR_EPERM;
                }
                event->satisfied = true;
                destroy = true;
                break;
            case OCR_EVENT_IDEM_T:
                if (event->satisfied) {
                    return 0;  // later satisfactions are ignored
                }
                event->satisfied = true;
                break;
            case OCR_EVENT_STICKY_T:
            case OCR_EVENT_COUNTED_T:
                if (event->satisfied) {
                    strata::detail::log().warn("strata-ocr: {}: ocrEventSatisfy({}): a {} event was satisfied twice",
                                               site.str(), show(event->guid),
                                               event->type == OCR_EVENT_STICKY_T ? "STICKY" : "COUNTED");
                    return OCR_EPERM;
                }
                event->satisfied = true;
                destroy = event->type == OCR_EVENT_COUNTED_T && event->added_dependences >= event->expected_dependences;
                break;
            case OCR_EVENT_LATCH_T:
                if (slot == OCR_EVENT_LATCH_INCR_SLOT) {
                    ++event->increments;
                } else if (slot == OCR_EVENT_LATCH_DECR_SLOT) {
                    ++event->decrements;
                } else {
                    return OCR_EINVAL;
                }
                if (event->satisfied || event->increments != event->decrements || event->increments == 0) {
                    return 0;
                }
                event->satisfied = true;
                destroy = true;
                db = NULL_GUID;  // a latch carries no data block
                break;
            case OCR_EVENT_CHANNEL_T:
                if (event->channel_waiters.empty() && event->channel_max != EVENT_CHANNEL_UNBOUNDED &&
                    event->channel_values.size() >= event->channel_max) {
                    strata::detail::log().warn(
                        "strata-ocr: {}: ocrEventSatisfy({}): the CHANNEL event already holds maxGen={} "
                        "satisfactions no dependence took",
                        site.str(), show(event->guid), event->channel_max);
                    return OCR_EBUSY;
                }
                event->channel_values.push_back(db);
                while (!event->channel_values.empty() && !event->channel_waiters.empty()) {
                    matched.emplace_back(event->channel_waiters.front(), event->channel_values.front());
                    event->channel_waiters.pop_front();
                    event->channel_values.pop_front();
                }
                break;
            default: return OCR_EINVAL;
        }
        if (event->type != OCR_EVENT_CHANNEL_T) {
            event->payload = db;
            waiters.swap(event->waiters);
        }
    }
    for (auto& [w, value] : matched) {
        deliver(w.destination, w.slot, value, w.mode, w.site);
    }
    if (destroy) {
        s->table.erase(event->guid);
    }
    fire(waiters, db);
    return 0;
}

u8 add_event_dependence(const std::shared_ptr<Event>& event, Event::Waiter waiter) {
    OcrState* s = state();
    bool now = false;
    bool destroy = false;
    ocrGuid_t payload{0};
    if (event->collective) {
        return add_collective_dependence(event, 0, waiter);
    }
    {
        std::lock_guard lock(event->mutex);
        switch (event->type) {
            case OCR_EVENT_CHANNEL_T: {
                if (event->channel_values.empty() && event->channel_max != EVENT_CHANNEL_UNBOUNDED &&
                    event->channel_waiters.size() >= event->channel_max) {
                    strata::detail::log().warn(
                        "strata-ocr: {}: ocrAddDependence({} -> {}): the CHANNEL event already holds maxGen={} "
                        "dependences no satisfaction reached",
                        waiter.site.str(), show(event->guid), show(waiter.destination), event->channel_max);
                    return OCR_EBUSY;
                }
                event->channel_waiters.push_back(waiter);
                if (event->channel_values.empty()) {
                    return 0;
                }
                payload = event->channel_values.front();
                waiter = event->channel_waiters.front();
                event->channel_values.pop_front();
                event->channel_waiters.pop_front();
                now = true;
                break;
            }
            case OCR_EVENT_COUNTED_T:
                ++event->added_dependences;
                now = event->satisfied;
                destroy = now && event->added_dependences >= event->expected_dependences;
                payload = event->payload;
                if (!now) {
                    event->waiters.push_back(waiter);
                }
                break;
            default:
                // ONCE and LATCH are gone once satisfied, so only IDEM and STICKY can be here satisfied.
                now = event->satisfied;
                payload = event->payload;
                if (!now) {
                    event->waiters.push_back(waiter);
                }
                break;
        }
    }
    if (destroy) {
        s->table.erase(event->guid);
    }
    if (now) {
        deliver(waiter.destination, waiter.slot, payload, waiter.mode, waiter.site);
    }
    return 0;
}

}  // namespace strata::ocr

using namespace strata::ocr;

extern "C" {

u8(ocrEventCreateParams)(ocrGuid_t* guid, ocrEventTypes_t eventType, u16 properties, ocrEventParams_t* params) {
    const CallSite site = take_call_site();
    OcrState* s = state();
    if (s == nullptr || guid == nullptr || eventType < OCR_EVENT_ONCE_T || eventType >= OCR_EVENT_T_MAX) {
        strata::detail::log().warn("strata-ocr: {}: ocrEventCreate(type {}): {}", site.str(),
                                   static_cast<int>(eventType),
                                   s == nullptr ? "no OCR program is running" : "invalid type or guid pointer");
        return OCR_EINVAL;
    }
    if (is_labeled(properties) && dist::is_remote(*guid)) {
        return dist::create_labeled_event(*guid, eventType, properties, params, site);  // on the GUID's owner
    }
    auto event = std::make_shared<Event>();
    event->type = eventType;
    event->takes_arg = (properties & EVT_PROP_TAKES_ARG) != 0;
    if (params != nullptr) {
        if (eventType == OCR_EVENT_COUNTED_T) {
            event->expected_dependences = params->EVENT_COUNTED.nbDeps;
        } else if (eventType == OCR_EVENT_LATCH_T) {
            event->increments = static_cast<s64>(params->EVENT_LATCH.counter);
        } else if (eventType == OCR_EVENT_CHANNEL_T) {
            // As in the reference: one satisfaction meets one dependence per
            // generation; maxGen generations may be pending (or unbounded).
            const ocrEventChannelParams_t& channel = params->EVENT_CHANNEL;
            if (channel.maxGen == 0 || channel.nbSat != 1 || channel.nbDeps != 1) {
                strata::detail::log().warn(
                    "strata-ocr: {}: ocrEventCreateParams(CHANNEL, maxGen={}, nbSat={}, nbDeps={}): maxGen must "
                    "be at least 1 (or EVENT_CHANNEL_UNBOUNDED), nbSat and nbDeps must be 1",
                    site.str(), channel.maxGen, channel.nbSat, channel.nbDeps);
                return OCR_EINVAL;
            }
            event->channel_max = channel.maxGen;
        } else if (eventType == OCR_EVENT_COLLECTIVE_T) {
            event->collective = make_collective(params, site);
            if (!event->collective) {
                return OCR_EINVAL;
            }
        }
    } else if (eventType == OCR_EVENT_COUNTED_T || eventType == OCR_EVENT_COLLECTIVE_T) {
        strata::detail::log().warn(
            "strata-ocr: {}: ocrEventCreate: a COUNTED or COLLECTIVE event needs ocrEventCreateParams "
            "with its parameters",
            site.str());
        return OCR_EINVAL;
    }
    if (is_labeled(properties)) {
        if (u8 rc = insert_labeled(*guid, properties, event); rc != 0) {
            if (rc == OCR_EGUIDEXISTS && joins_collective(*s, *guid, properties, *event)) {
                return 0;
            }
            strata::detail::log().warn("strata-ocr: {}: ocrEventCreate(labeled {}): {}", site.str(), show(*guid),
                                       error_name(rc));
            return rc;
        }
        return 0;
    }
    *guid = s->table.insert(std::move(event));
    return 0;
}

u8(ocrEventCreate)(ocrGuid_t* guid, ocrEventTypes_t eventType, u16 properties) {
    return (ocrEventCreateParams)(guid, eventType, properties, nullptr);
}

u8(ocrEventDestroy)(ocrGuid_t guid) {
    const CallSite site = take_call_site();
    OcrState* s = state();
    if (kind_of(guid) == Kind::event && dist::route_destroy(guid, site)) {
        return 0;  // checked where it lives
    }
    if (s == nullptr || kind_of(guid) != Kind::event || !s->table.erase(guid)) {
        strata::detail::log().warn("strata-ocr: {}: ocrEventDestroy({}): not a live event", site.str(), show(guid));
        return OCR_EINVAL;
    }
    return 0;
}

u8(ocrEventSatisfySlot)(ocrGuid_t guid, ocrGuid_t dataGuid, u32 slot) {
    const CallSite site = take_call_site();
    OcrState* s = state();
    if (!is_null(dataGuid) && kind_of(dataGuid) != Kind::db) {
        return OCR_EINVAL;
    }
    if (kind_of(guid) == Kind::event && dist::route_satisfy(guid, slot, dataGuid, DB_DEFAULT_MODE, site, true)) {
        return 0;  // checked where it lives
    }
    auto event = s != nullptr ? s->table.find_as<Event>(guid, Kind::event) : nullptr;
    if (!event) {
        strata::detail::log().warn("strata-ocr: {}: ocrEventSatisfy({}): not a live event", site.str(), show(guid));
        return OCR_EINVAL;
    }
    if (!is_null(dataGuid) && kind_of(dataGuid) != Kind::db) {
        return OCR_EINVAL;
    }
    return satisfy_event(event, dataGuid, slot, site);
}

u8(ocrEventSatisfy)(ocrGuid_t guid, ocrGuid_t dataGuid) {
    const CallSite site = take_call_site();
    strataOcrCallSite(site.file, site.line);
    return (ocrEventSatisfySlot)(guid, dataGuid, 0);
}

}  // extern "C"
