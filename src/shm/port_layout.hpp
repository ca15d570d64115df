// SPDX-License-Identifier: MIT
// What a port holds in the segment (port.hpp describes the protocol).
//
// Message s lives in slot s % slots. A slot goes free -> loaned (by one
// producer) -> committed or abandoned (with a bit per consumer that must
// still receive or skip it) -> free when the last bit is cleared. All state
// changes happen under the port's owner-token lock; the futex words
// `published` and `freed` only wake sleepers.
//
// The one exception is the consumer's fast path: commit stores `ready` =
// s + 1 last (release), and a consumer whose next message is s takes the
// slot without the lock when it reads that value (acquire). No other message
// has that value, and the slot cannot move on while the consumer's bit is set,
// which only the consumer itself (or the recovery after its death) clears.
// Each consumer's `next_seq` is written by that consumer alone and lies in a
// cache line of its own, so a commit, which reads the consumer table, does not
// have to fetch lines a consumer writes on every message.
//
// Invariants, true whenever the lock is free (W = write_seq, n = slots):
//   P1 1 <= slots <= kMaxPortSlots and 1 <= consumers <= kMaxPortPeers.
//   P2 every slot state is free, loaned, committed or abandoned; every peer
//      state is never, active, departed or closed.
//   P3 a slot k that is not free holds message `sequence` of the ring's
//      window: sequence % n == k and W - n <= sequence < W.
//   P4 a loaned slot's loaner is a live producer.
//   P5 a committed or abandoned slot has holders (else it is free), only bits
//      below `consumers`, and none of a consumer that left (departed, closed).
//   P6 a committed slot shows ready == sequence + 1.
//   P7 producers_active counts the producers in state active, and
//      producers_joined is at least the producers not in state never.
// A user killed while it holds the lock stops between two steps of a critical
// section. Each section orders its steps (kill_step() between them) so that
// every prefix breaks only invariants port_repair.cpp restores without losing
// or repeating a committed message:
//   loan     slot fields, state = loaned | W = s + 1    -> P3: the loan is undone
//   commit   used, holders | state = committed | ready  -> P4: dropped, as a
//            death before commit; P6: the commit is completed (delivered once)
//   release, skip, leave: holders &= ~bit | state = free -> P5: freed
//   cancel   holders | state = abandoned                -> P4: dropped
//   close    peer state = closed | counts | its slots   -> P7 recounted; its
//            loans P4 dropped, its bits P5 cleared
//   join     peer fields | state = active | counts      -> P7 recounted
//   recovery of a dead user: its slots | death note | state = departed |
//            counts -> redone by the next recovery (its death is reported
//            again rather than never)
// The survivor that finds the lock's owner dead takes the lock over (one CAS
// on the owner word elects it), repairs, runs the dead users' recovery and
// reports the holder's death with what was repaired. A value no prefix
// explains (P1, P2, P3 beyond an undone loan, P5's bits above `consumers`)
// means the port was overwritten: it is marked broken, naming the port.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "shm/layout.hpp"
#include "strata/shm/handle.hpp"

namespace strata::shm_detail {

inline constexpr unsigned kMaxPortPeers = 64;
inline constexpr unsigned kMaxPortSlots = 1024;
inline constexpr std::uint64_t kMaxSlotBytes = 1ULL << 30U;
/// Death notes kept, so a user that missed several deaths still reads each.
inline constexpr unsigned kDeathNotes = 4;

enum SlotState : std::uint32_t { slot_free = 0, slot_loaned = 1, slot_committed = 2, slot_abandoned = 3 };
enum PeerState : std::uint32_t { peer_never = 0, peer_active = 1, peer_departed = 2, peer_closed = 3 };
enum SyncFamily : std::uint32_t { sync_segment = 1, sync_mpi = 2 };

struct alignas(64) PortSlot {
    std::atomic<std::uint64_t> ready{0};  ///< sequence + 1 of the message committed here (fast path)
    std::uint64_t sequence = 0;
    std::uint32_t state = slot_free;
    std::uint32_t producer = 0;
    std::uint64_t loaner = 0;   ///< token of the producer holding the loan
    std::uint64_t holders = 0;  ///< consumers that still have to receive or release it
    std::uint64_t used = 0;     ///< committed inline bytes
    Handle handle;
    std::uint64_t payload_offset = 0;  ///< from the segment's start
};

struct PortPeer {
    std::uint64_t token = 0;
    std::uint32_t state = peer_never;
    std::uint32_t mpi_rank = 0;  ///< sync=mpi: rank in MPI_COMM_WORLD + 1 (0: none), whom to wake
    std::uint64_t join_seq = 0;  ///< consumers: first message meant for this consumer
};

/// A consumer's next message to receive, written by that consumer alone.
struct alignas(64) PortCursor {
    std::uint64_t next_seq = 0;
};

struct PortShared {
    TokenLock lock;
    std::uint32_t slots = 0;
    std::uint32_t consumers = 0;
    std::uint64_t slot_bytes = 0;
    std::uint64_t write_seq = 0;
    std::uint32_t producers_active = 0;
    std::uint32_t producers_joined = 0;
    std::uint32_t producers_died = 0;
    std::uint32_t sync_family = 0;  ///< sync_segment or sync_mpi: every user must wait the same way
    alignas(64) std::atomic<std::uint32_t> published{0};
    std::atomic<std::uint32_t> publish_waiters{0};
    alignas(64) std::atomic<std::uint32_t> freed{0};
    std::atomic<std::uint32_t> free_waiters{0};
    alignas(64) std::atomic<std::uint32_t> broken{0};
    char broken_reason[384] = {};
    /// Deaths reported so far; note d (0-based) is death_notes[d % kDeathNotes].
    std::atomic<std::uint64_t> deaths{0};
    char death_notes[kDeathNotes][384] = {};
    PortPeer producers[kMaxPortPeers];
    PortPeer consumer_peers[kMaxPortPeers];
    PortCursor cursors[kMaxPortPeers];  ///< per consumer index

    PortSlot* slot_array() noexcept { return reinterpret_cast<PortSlot*>(this + 1); }
    PortSlot& slot(std::uint64_t sequence) noexcept { return slot_array()[sequence % slots]; }
};

/// Bytes of a port with this shape (header, slots, payload).
inline std::size_t port_bytes(unsigned slots, std::size_t slot_bytes) {
    const std::size_t stride = (slot_bytes + 63) / 64 * 64;
    return sizeof(PortShared) + slots * sizeof(PortSlot) + 64 + slots * stride;
}

/// Consumers that must receive message `s`: every consumer index that has not
/// left and joined at or before s (an index never joined is still expected).
inline std::uint64_t holders_for(const PortShared& p, std::uint64_t s) {
    std::uint64_t mask = 0;
    for (unsigned i = 0; i < p.consumers; ++i) {
        const PortPeer& c = p.consumer_peers[i];
        if ((c.state == peer_never || c.state == peer_active) && c.join_seq <= s) {
            mask |= 1ULL << i;
        }
    }
    return mask;
}

/// Writes `text` into a fixed field, cut to fit, NUL-terminated.
inline void copy_text(char* out, std::size_t capacity, std::string_view text) {
    const std::size_t n = std::min(capacity - 1, text.size());
    std::memcpy(out, text.data(), n);
    out[n] = '\0';
}

/// A NUL-terminated text in a fixed array of the segment, never read past `capacity`.
inline std::string_view text_of(const char* text, std::size_t capacity) {
    return {text, ::strnlen(text, capacity)};
}

/// Test hook points (see strata/shm/testing.hpp).
void crash_point(int point) noexcept;

/// The boundary between two steps of a critical section: the compiler keeps
/// the stores before it before the ones after it, so a holder killed at any
/// instruction leaves a prefix of the steps (the invariants above).
inline void kill_step() noexcept {
    std::atomic_signal_fence(std::memory_order_seq_cst);
}

/// Clears consumer `bit` from a slot; frees it when no holder is left. True if freed.
inline bool drop_holder(PortSlot& slot, std::uint64_t bit) {
    if ((slot.holders & bit) == 0) {
        return false;
    }
    slot.holders &= ~bit;
    kill_step();
    crash_point(5);  // strata::shm_testing::CrashPoint::port_holder_dropped
    if (slot.holders == 0 && (slot.state == slot_committed || slot.state == slot_abandoned)) {
        slot.state = slot_free;
        return true;
    }
    return false;
}

/// Moves a futex word on and wakes its sleepers, if any.
inline void bump_and_wake(std::atomic<std::uint32_t>& word, const std::atomic<std::uint32_t>& waiters) {
    word.fetch_add(1, std::memory_order_seq_cst);
    if (waiters.load(std::memory_order_seq_cst) != 0) {
        futex_wake_all(&word);
    }
}

}  // namespace strata::shm_detail
