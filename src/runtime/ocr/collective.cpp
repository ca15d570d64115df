// SPDX-License-Identifier: MIT
// Collective (reduction) events (extensions/ocr-reduction-event.h): one
// contribution per slot and generation, reduced in slot order into a new data
// block that satisfies the dependences registered for that generation.
#include <cstring>
#include <map>

#include "core/log.hpp"
#include "dist/api.hpp"
#include "ocr/extensions/ocr-reduction-event.h"
#include "ocr/ocr.h"
#include "state.hpp"

namespace strata::ocr {

struct Collective {
    u32 contributors = 0;
    u32 max_gen = 1;
    u16 datum_count = 0;
    redOp_t op = 0;
    std::size_t datum_size = 8;

    struct Generation {
        u32 received = 0;
        std::vector<std::vector<std::byte>> values;  // per slot
        std::vector<Event::Waiter> waiters;
        bool done = false;
        ocrGuid_t result{0};
    };
    std::mutex mutex;
    std::vector<u64> next_contribution;  // per slot: its next generation
    std::vector<u64> next_dependence;    // per slot
    std::map<u64, Generation> generations;
    u32 incomplete = 0;
};

namespace {

template <class T>
T combine(T a, T b, unsigned operation) {
    switch (operation) {
        case 0: return a + b;
        case 1: return a * b;
        case 2: return b < a ? b : a;
        case 3: return a < b ? b : a;
        default: break;
    }
    if constexpr (std::is_integral_v<T>) {
        switch (operation) {
            case 4: return a & b;
            case 5: return a | b;
            case 6: return a ^ b;
            default: break;
        }
    }
    return a;
}

template <class T>
void reduce_as(std::byte* out, const std::vector<std::vector<std::byte>>& values, std::size_t count, unsigned op) {
    for (std::size_t d = 0; d < count; ++d) {
        T acc;
        std::memcpy(&acc, values[0].data() + d * sizeof(T), sizeof(T));
        for (std::size_t slot = 1; slot < values.size(); ++slot) {
            T v;
            std::memcpy(&v, values[slot].data() + d * sizeof(T), sizeof(T));
            acc = combine(acc, v, op);
        }
        std::memcpy(out + d * sizeof(T), &acc, sizeof(T));
    }
}

// Types by size, signedness and kind; false for a combination no C type has.
bool reduce(std::byte* out, const Collective& c, const std::vector<std::vector<std::byte>>& values) {
    const unsigned operation = (c.op >> 7) & 7U;
    const bool real = (c.op & REDOP_REAL) != 0, is_signed = (c.op & REDOP_SIGNED) != 0;
    const std::size_t n = c.datum_count;
    if (real) {
        if (c.datum_size == 8) {
            return reduce_as<double>(out, values, n, operation), true;
        }
        if (c.datum_size == 4) {
            return reduce_as<float>(out, values, n, operation), true;
        }
        return false;
    }
    switch (c.datum_size) {
        case 1: is_signed ? reduce_as<s8>(out, values, n, operation) : reduce_as<u8>(out, values, n, operation); break;
        case 2:
            is_signed ? reduce_as<s16>(out, values, n, operation) : reduce_as<u16>(out, values, n, operation);
            break;
        case 4:
            is_signed ? reduce_as<s32>(out, values, n, operation) : reduce_as<u32>(out, values, n, operation);
            break;
        case 8:
            is_signed ? reduce_as<s64>(out, values, n, operation) : reduce_as<u64>(out, values, n, operation);
            break;
        default: return false;
    }
    return true;
}

}  // namespace

std::shared_ptr<Collective> make_collective(const ocrEventParams_t* params, const CallSite& site) {
    const ocrEventCollectiveParams_t& p = params->EVENT_COLLECTIVE;
    auto c = std::make_shared<Collective>();
    c->contributors = p.nbContribs;
    c->max_gen = p.maxGen;
    c->datum_count = p.nbDatum;
    c->op = p.op;
    c->datum_size = ((p.op >> 2) & 7U) + 1;
    const unsigned operation = (p.op >> 7) & 7U;
    const char* why = nullptr;
    if (p.nbContribs == 0 || p.nbDatum == 0 || p.maxGen == 0) {
        why = "nbContribs, nbDatum and maxGen must be at least 1";
    } else if (p.nbContribsPd != p.nbContribs &&
               static_cast<u64>(p.nbContribsPd) * static_cast<u64>(dist::ranks()) != p.nbContribs) {
        why = "nbContribs must be nbContribsPd times the number of ranks (or equal it)";
    } else if (p.type != COL_REDUCE && p.type != COL_ALLREDUCE) {
        why = "type must be COL_REDUCE or COL_ALLREDUCE";
    } else if (operation > 6 ||
               ((p.op & REDOP_REAL) != 0 && (operation > 3 || (c->datum_size != 4 && c->datum_size != 8))) ||
               (c->datum_size != 1 && c->datum_size != 2 && c->datum_size != 4 && c->datum_size != 8)) {
        why = "op is not a reduction strata knows (datum size 1, 2, 4, 8; bit operations on integers only)";
    }
    if (why != nullptr) {
        strata::detail::log().warn(
            "strata-ocr: {}: ocrEventCreateParams(COLLECTIVE, nbContribs={}, nbDatum={}, op={:#x}): {}", site.str(),
            p.nbContribs, p.nbDatum, p.op, why);
        return nullptr;
    }
    c->next_contribution.assign(p.nbContribs, 0);
    c->next_dependence.assign(p.nbContribs, 0);
    return c;
}

bool same_collective(const Collective& a, const Collective& b) noexcept {
    return a.contributors == b.contributors && a.max_gen == b.max_gen && a.datum_count == b.datum_count && a.op == b.op;
}

u64 collective_contribution_bytes(const Event& event) {
    return event.collective ? event.collective->datum_size * event.collective->datum_count : 0;
}

u8 add_collective_dependence(const std::shared_ptr<Event>& event, u32 sslot, const Event::Waiter& waiter) {
    Collective& c = *event->collective;
    ocrGuid_t ready{0};
    {
        std::lock_guard lock(c.mutex);
        if (sslot >= c.contributors) {
            return OCR_EINVAL;
        }
        auto& generation = c.generations[c.next_dependence[sslot]++];
        if (!generation.done) {
            generation.waiters.push_back(waiter);
            return 0;
        }
        ready = generation.result;
    }
    deliver(waiter.destination, waiter.slot, ready, waiter.mode, waiter.site);
    return 0;
}

}  // namespace strata::ocr

using namespace strata::ocr;

extern "C" {

u8(ocrEventCollectiveSatisfySlot)(ocrGuid_t eventGuid, void* dataPtr, u32 islot) {
    const CallSite site = take_call_site();
    OcrState* s = state();
    if (dist::route_collective(eventGuid, dataPtr, islot, site)) {
        return 0;  // reduced where the event lives
    }
    auto event = s != nullptr ? s->table.find_as<Event>(eventGuid, Kind::event) : nullptr;
    if (!event || !event->collective || dataPtr == nullptr) {
        strata::detail::log().warn("strata-ocr: {}: ocrEventCollectiveSatisfySlot({}): not a live COLLECTIVE event",
                                   site.str(), show(eventGuid));
        return OCR_EINVAL;
    }
    Collective& c = *event->collective;
    std::vector<Event::Waiter> waiters;
    ocrGuid_t result{0};
    {
        std::lock_guard lock(c.mutex);
        if (islot >= c.contributors) {
            return OCR_EINVAL;
        }
        const u64 g = c.next_contribution[islot];
        auto it = c.generations.find(g);
        const bool fresh = it == c.generations.end() || (it->second.received == 0 && !it->second.done);
        if (fresh && c.max_gen != EVENT_CHANNEL_UNBOUNDED && c.incomplete >= c.max_gen) {
            strata::detail::log().warn(
                "strata-ocr: {}: ocrEventCollectiveSatisfySlot({}, slot {}): maxGen={} generations are incomplete",
                site.str(), show(eventGuid), islot, c.max_gen);
            return OCR_EBUSY;
        }
        auto& generation = c.generations[g];
        ++c.next_contribution[islot];
        if (generation.values.empty()) {
            generation.values.resize(c.contributors);
            ++c.incomplete;
        }
        const std::size_t bytes = c.datum_size * c.datum_count;
        generation.values[islot].assign(static_cast<std::byte*>(dataPtr), static_cast<std::byte*>(dataPtr) + bytes);
        if (++generation.received < c.contributors) {
            return 0;
        }
        auto db = make_db(bytes, DbPlacement::memory);
        if (!db) {
            return OCR_ENOMEM;
        }
        if (!reduce(static_cast<std::byte*>((*db)->data), c, generation.values)) {
            return OCR_EINVAL;
        }
        result = s->table.insert(*db);
        generation.done = true;
        generation.result = result;
        generation.values.clear();
        --c.incomplete;
        waiters.swap(generation.waiters);
    }
    for (const auto& w : waiters) {
        deliver(w.destination, w.slot, result, w.mode, w.site);
    }
    return 0;
}

u8(ocrAddDependenceSlot)(ocrGuid_t source, u32 sslot, ocrGuid_t destination, u32 dslot, ocrDbAccessMode_t mode) {
    const CallSite site = take_call_site();
    OcrState* s = state();
    if (sslot != 0 && kind_of(source) == Kind::event &&
        dist::route_add_dependence(source, sslot, destination, dslot, mode, site)) {
        return 0;  // registered where the event lives
    }
    auto event = s != nullptr ? s->table.find_as<Event>(source, Kind::event) : nullptr;
    if (event && event->collective) {
        const Kind dst = kind_of(destination);
        if ((dst != Kind::edt && dst != Kind::event) ||
            (!dist::is_remote(destination) && !s->table.find(destination))) {
            return OCR_EINVAL;
        }
        return add_collective_dependence(event, sslot, Event::Waiter{destination, dslot, mode, site});
    }
    if (sslot != 0) {
        return OCR_EINVAL;
    }
    strataOcrCallSite(site.file, site.line);
    return (ocrAddDependence)(source, destination, dslot, mode);
}

}  // extern "C"
