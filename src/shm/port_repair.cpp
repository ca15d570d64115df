// SPDX-License-Identifier: MIT
// Repairing a port after its lock's holder died (port_repair.hpp), and the
// recovery of what dead users held (Port::recover_dead_peers).
#include "shm/port_repair.hpp"

#include <fmt/format.h>

#include "shm/mpi_waiter.hpp"
#include "strata/shm/port.hpp"
#include "strata/shm/testing.hpp"

namespace strata::shm_detail {
namespace {

bool known_peer_state(std::uint32_t state) {
    return state == peer_never || state == peer_active || state == peer_departed || state == peer_closed;
}

/// P1, P2 of the peer tables: values fixed at creation or only ever written whole.
std::string check_shape(const PortShared& p) {
    if (p.slots < 1 || p.slots > kMaxPortSlots || p.consumers < 1 || p.consumers > kMaxPortPeers) {
        return fmt::format("its shape reads {} slots and {} consumers (P1)", p.slots, p.consumers);
    }
    for (unsigned i = 0; i < kMaxPortPeers; ++i) {
        if (!known_peer_state(p.producers[i].state) || !known_peer_state(p.consumer_peers[i].state)) {
            return fmt::format("producer or consumer {} has state {}/{} (P2)", i, p.producers[i].state,
                               p.consumer_peers[i].state);
        }
    }
    return {};
}

/// P3 for one slot that is not free: undoes the loan a holder was killed in
/// before it moved the write sequence on; false when the slot is past repair.
bool repair_window(PortShared& p, unsigned k, PortRepair& r) {
    PortSlot& slot = p.slot_array()[k];
    const std::uint64_t w = p.write_seq;
    if (slot.sequence % p.slots != k || slot.sequence + p.slots < w) {
        r.fault = fmt::format("slot {} holds message {} in state {}, outside the ring's window [{}, {}) (P3)", k,
                              slot.sequence, slot.state, w < p.slots ? 0 : w - p.slots, w);
        return false;
    }
    if (slot.sequence < w) {
        return true;
    }
    if (slot.state == slot_loaned && slot.sequence == w) {
        slot.state = slot_free;
        r.done.push_back(fmt::format("loan of message {} undone", w));
        r.freed = true;
        return true;
    }
    r.fault = fmt::format("slot {} holds message {} in state {}, at or past the next message {} (P3)", k, slot.sequence,
                          slot.state, w);
    return false;
}

/// P5, P6 for a committed or abandoned slot.
void repair_holders(PortShared& p, unsigned k, std::uint64_t left, PortRepair& r) {
    PortSlot& slot = p.slot_array()[k];
    for (unsigned i = 0; i < p.consumers; ++i) {
        const std::uint64_t bit = 1ULL << i;
        if ((slot.holders & left & bit) != 0) {
            slot.holders &= ~bit;
            r.done.push_back(fmt::format("consumer {}'s claim on message {} dropped", i, slot.sequence));
        }
    }
    if (slot.holders == 0) {
        slot.state = slot_free;
        r.done.push_back(fmt::format("message {} freed", slot.sequence));
        r.freed = true;
        return;
    }
    if (slot.state == slot_committed && slot.ready.load(std::memory_order_relaxed) != slot.sequence + 1) {
        slot.ready.store(slot.sequence + 1, std::memory_order_release);
        r.done.push_back(fmt::format("commit of message {} completed", slot.sequence));
        r.published = true;
    }
}

/// P7: the producer counts from the table.
void repair_counts(PortShared& p, PortRepair& r) {
    std::uint32_t active = 0;
    std::uint32_t joined = 0;
    for (const PortPeer& peer : p.producers) {
        active += peer.state == peer_active ? 1U : 0U;
        joined += peer.state != peer_never ? 1U : 0U;
    }
    if (p.producers_active != active) {
        r.done.push_back(fmt::format("active producers {} -> {}", p.producers_active, active));
        p.producers_active = active;
        r.published = true;  // consumers may have reached the end of the stream
    }
    if (p.producers_joined < joined) {
        p.producers_joined = joined;
        r.published = true;
    }
}

}  // namespace

PortRepair repair_port(PortShared& p) {
    PortRepair r;
    if (r.fault = check_shape(p); !r.fault.empty()) {
        return r;
    }
    const std::uint64_t all = p.consumers == 64 ? ~0ULL : (1ULL << p.consumers) - 1;
    std::uint64_t left = 0;  // consumers that left hold no slot
    for (unsigned i = 0; i < p.consumers; ++i) {
        const std::uint32_t state = p.consumer_peers[i].state;
        left |= state == peer_departed || state == peer_closed ? 1ULL << i : 0;
    }
    for (unsigned k = 0; k < p.slots; ++k) {
        PortSlot& slot = p.slot_array()[k];
        if (slot.state > slot_abandoned) {
            r.fault = fmt::format("slot {} has state {} (P2)", k, slot.state);
            return r;
        }
        if (slot.state == slot_free) {
            continue;
        }
        if (!repair_window(p, k, r)) {
            return r;
        }
        if (slot.state != slot_committed && slot.state != slot_abandoned) {
            continue;  // a loan: undone above, or P4's (the recovery's)
        }
        if ((slot.holders & ~all) != 0) {
            r.fault = fmt::format("slot {} (message {}) is held by consumers {:#x}, beyond the port's {} (P5)", k,
                                  slot.sequence, slot.holders, p.consumers);
            return r;
        }
        repair_holders(p, k, left, r);
    }
    repair_counts(p, r);
    return r;
}

std::vector<std::uint64_t> abandon_loans(PortShared& p, std::uint64_t loaner, bool* freed) {
    std::vector<std::uint64_t> lost;
    for (unsigned k = 0; k < p.slots; ++k) {
        PortSlot& slot = p.slot_array()[k];
        if (slot.state != slot_loaned || slot.loaner != loaner) {
            continue;
        }
        slot.holders = holders_for(p, slot.sequence);
        kill_step();
        slot.state = slot.holders == 0 ? slot_free : slot_abandoned;
        *freed |= slot.holders == 0;
        lost.push_back(slot.sequence);
    }
    return lost;
}

std::string list_text(const std::vector<std::string>& items, std::size_t limit) {
    std::string out;
    for (std::size_t i = 0; i < items.size() && i < limit; ++i) {
        out += fmt::format("{}{}", i == 0 ? "" : ", ", items[i]);
    }
    if (items.size() > limit) {
        out += fmt::format(" and {} more", items.size() - limit);
    }
    return out;
}

}  // namespace strata::shm_detail

namespace strata {

using shm_detail::PortPeer;
using shm_detail::PortSlot;

namespace {

std::string messages_text(const std::vector<std::uint64_t>& sequences) {
    std::vector<std::string> items;
    items.reserve(sequences.size());
    for (const std::uint64_t s : sequences) {
        items.push_back(std::to_string(s));
    }
    return shm_detail::list_text(items);
}

}  // namespace

Result<void> Port::heal(std::string_view op, std::uint64_t dead_holder) {
    shm_detail::PortRepair repair = shm_detail::repair_port(*shared_);
    if (!repair.fault.empty()) {
        mark_broken(
            fmt::format("port '{}' is broken: after {} died holding its lock, {}, which no step of strata's "
                        "leaves (the port was overwritten); close every user of port '{}', then remove it "
                        "with Segment::remove_port and recreate it",
                        name_, attachment_->describe(dead_holder), repair.fault, name_));
        unlock();
        return std::unexpected(broken_error(op));
    }
    const std::string repaired = repair.done.empty() ? "nothing was half done" : shm_detail::list_text(repair.done);
    recover_locked(dead_holder, repaired, &repair.freed);
    // Whatever the holder was about to wake is woken now; a spurious wake-up costs a look.
    signal(true);
    signal(false);
    return {};
}

void Port::mark_broken(const std::string& reason) {
    std::uint32_t expected = 0;
    if (shared_->broken.compare_exchange_strong(expected, 2)) {
        shm_detail::copy_text(shared_->broken_reason, sizeof shared_->broken_reason, reason);
        shared_->broken.store(1, std::memory_order_release);
    }
    signal(true);
    signal(false);
}

void Port::report_death(const std::string& text) {
    // Under the port's lock: the one writer of the notes and the count.
    const std::uint64_t d = shared_->deaths.load(std::memory_order_relaxed);
    shm_detail::copy_text(shared_->death_notes[d % shm_detail::kDeathNotes], sizeof shared_->death_notes[0], text);
    shm_detail::kill_step();
    shared_->deaths.store(d + 1, std::memory_order_release);
}

// Finds users of the port that died, and undoes what they held.
void Port::recover_dead_peers() {
    auto any_dead = [&] {
        for (const auto* table : {shared_->producers, shared_->consumer_peers}) {
            for (unsigned i = 0; i < shm_detail::kMaxPortPeers; ++i) {
                const PortPeer& peer = table[i];
                if (peer.state == shm_detail::peer_active && peer.token != token_ && !attachment_->alive(peer.token)) {
                    return true;
                }
            }
        }
        return false;
    };
    if (!any_dead() || !lock("Port").has_value()) {
        return;
    }
    bool freed = false;
    const std::uint64_t before = shared_->deaths.load(std::memory_order_relaxed);
    recover_locked(0, {}, &freed);
    const bool published = shared_->deaths.load(std::memory_order_relaxed) != before;
    unlock();
    if (freed) {
        signal(true);
    }
    if (published) {
        signal(false);
    }
}

// Under the lock: the dead producers' loans are dropped, the dead consumers'
// slots released, each death reported once; `dead_holder` (0: none), which
// died holding the lock, is named with what the repair did (`repaired`).
void Port::recover_locked(std::uint64_t dead_holder, const std::string& repaired, bool* freed) {
    using shm_detail::kill_step;
    const auto crash_point = [] {
        shm_detail::crash_point(static_cast<int>(shm_testing::CrashPoint::port_peer_recovering));
    };
    const auto held = [&](std::uint64_t token) {
        return token == dead_holder ? fmt::format(" holding the port's lock (repaired: {})", repaired) : "";
    };
    const auto dead = [&](const PortPeer& peer) {
        return peer.state == shm_detail::peer_active && peer.token != token_ && !attachment_->alive(peer.token);
    };
    bool holder_reported = dead_holder == 0;
    for (unsigned i = 0; i < shm_detail::kMaxPortPeers; ++i) {
        PortPeer& peer = shared_->producers[i];
        if (!dead(peer)) {
            continue;
        }
        const std::vector<std::uint64_t> lost = shm_detail::abandon_loans(*shared_, peer.token, freed);
        crash_point();
        const std::string who = attachment_->describe(peer.token);
        report_death(lost.empty()
                         ? fmt::format("producer {} ({}) died{}; no message was lost", i, who, held(peer.token))
                         : fmt::format("producer {} ({}) died between loan and commit{}; message {} is "
                                       "dropped and skipped by the consumers",
                                       i, who, held(peer.token), messages_text(lost)));
        holder_reported |= peer.token == dead_holder;
        kill_step();
        peer.state = shm_detail::peer_departed;
        kill_step();
        --shared_->producers_active;
        ++shared_->producers_died;
    }
    for (unsigned i = 0; i < shared_->consumers; ++i) {
        PortPeer& peer = shared_->consumer_peers[i];
        if (!dead(peer)) {
            continue;
        }
        unsigned holding = 0;
        for (unsigned k = 0; k < shared_->slots; ++k) {
            PortSlot& slot = shared_->slot_array()[k];
            holding += (slot.holders & (1ULL << i)) != 0 ? 1U : 0U;
            *freed |= shm_detail::drop_holder(slot, 1ULL << i);
        }
        crash_point();
        report_death(
            fmt::format("consumer {} ({}) died{}; the {} slot(s) it held or had not yet received are "
                        "released and it leaves the fan-out",
                        i, attachment_->describe(peer.token), held(peer.token), holding));
        holder_reported |= peer.token == dead_holder;
        kill_step();
        peer.state = shm_detail::peer_departed;
    }
    if (!holder_reported) {
        report_holder_death(dead_holder, repaired, freed);
    }
}

// The holder was no active user of the port: it died joining or leaving it.
void Port::report_holder_death(std::uint64_t dead_holder, const std::string& repaired, bool* freed) {
    std::string who = attachment_->describe(dead_holder);
    for (const auto* table : {shared_->producers, shared_->consumer_peers}) {
        for (unsigned i = 0; i < shm_detail::kMaxPortPeers; ++i) {
            if (table[i].token == dead_holder) {
                who = fmt::format("{} {} ({}), opening or closing the port,",
                                  table == shared_->producers ? "producer" : "consumer", i, who);
            }
        }
    }
    const std::vector<std::uint64_t> lost = shm_detail::abandon_loans(*shared_, dead_holder, freed);
    report_death(fmt::format(
        "{} died holding the port's lock (repaired: {}){}", who, repaired,
        lost.empty() ? "; no message was lost"
                     : fmt::format("; message {} is dropped and skipped by the consumers", messages_text(lost))));
}

}  // namespace strata
