// SPDX-License-Identifier: MIT
// Ports: loan/commit/recv/release over a slot ring in the segment.
#include "strata/shm/port.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstring>
#include <thread>

#include <sched.h>

#include "core/cpu_relax.hpp"
#include "core/log.hpp"
#include "shm/mpi_waiter.hpp"
#include "shm/objects.hpp"
#include "shm/port_layout.hpp"
#include "strata/shm/testing.hpp"

namespace strata {

using shm_detail::bump_and_wake;
using shm_detail::drop_holder;
using shm_detail::holders_for;
using shm_detail::PortPeer;
using shm_detail::PortShared;
using shm_detail::PortSlot;
using shm_detail::text_of;

namespace {

std::atomic<shm_testing::CrashHook> g_crash_hook{nullptr};

}  // namespace

namespace shm_testing {
void set_crash_hook(CrashHook hook) noexcept {
    g_crash_hook.store(hook);
}
}  // namespace shm_testing

namespace shm_detail {
void crash_point(int point) noexcept {
    if (auto* hook = g_crash_hook.load(std::memory_order_relaxed); hook != nullptr) {
        hook(static_cast<shm_testing::CrashPoint>(point));
    }
}
}  // namespace shm_detail

// ---- Port basics ------------------------------------------------------------

Port::Port(Port&& other) noexcept
    : attachment_(std::exchange(other.attachment_, nullptr)),
      shared_(std::exchange(other.shared_, nullptr)),
      name_(std::move(other.name_)),
      role_(other.role_),
      sync_(other.sync_),
      index_(other.index_),
      token_(other.token_),
      seen_deaths_(other.seen_deaths_),
      messages_(other.messages_),
      mpi_tag_(other.mpi_tag_) {}

Port& Port::operator=(Port&& other) noexcept {
    if (this != &other) {
        (void)close();
        attachment_ = std::exchange(other.attachment_, nullptr);
        shared_ = std::exchange(other.shared_, nullptr);
        name_ = std::move(other.name_);
        role_ = other.role_;
        sync_ = other.sync_;
        index_ = other.index_;
        token_ = other.token_;
        seen_deaths_ = other.seen_deaths_;
        messages_ = other.messages_;
        mpi_tag_ = other.mpi_tag_;
    }
    return *this;
}

Port::~Port() {
    if (auto closed = close(); !closed) {
        detail::log().debug("{}", closed.error().what());
    }
}

PortShape Port::shape() const noexcept {
    if (shared_ == nullptr) {
        return {};
    }
    return {shared_->slots, shared_->slot_bytes, shared_->consumers};
}

Result<Handle> Port::save_raw(const void* object, const shm_detail::ObjectSpec& spec) const {
    if (attachment_ == nullptr) {
        return make_error(Errc::invalid_argument, "Port::send: the port is closed");
    }
    auto header = shm_detail::header_of(*attachment_, "Port::send", object, spec);
    if (!header) {
        return std::unexpected(header.error());
    }
    const auto offset = static_cast<std::uint64_t>(static_cast<const std::byte*>(object) - attachment_->base);
    return Handle{attachment_->header->segment_id, (*header)->generation, offset, spec.type};
}

Result<void*> Port::load_raw(const Handle& handle, const shm_detail::ObjectSpec& spec) const {
    if (attachment_ == nullptr) {
        return make_error(Errc::invalid_argument, "Sample::get: the port is closed");
    }
    return shm_detail::load_object(*attachment_, handle, spec);
}

std::span<std::byte> Port::payload(const PortSlot* slot) const noexcept {
    return {attachment_->base + slot->payload_offset, static_cast<std::size_t>(shared_->slot_bytes)};
}

Result<void> Port::lock(std::string_view op) {
    if (shared_->broken.load(std::memory_order_acquire) != 0) {
        return std::unexpected(broken_error(op));
    }
    // Like a robust mutex's EOWNERDEAD: a dead holder's lock is ours, and so is
    // the repair of what it was changing (port_repair.cpp).
    if (const std::uint64_t dead = shm_detail::lock_token(shared_->lock, *attachment_); dead != 0) {
        if (auto healed = heal(op, dead); !healed) {
            return healed;
        }
    }
    shm_detail::crash_point(static_cast<int>(shm_testing::CrashPoint::port_lock_held));
    return {};
}

void Port::unlock() noexcept {
    shm_detail::unlock_token(shared_->lock);
}

Error Port::broken_error(std::string_view op) const {
    // 2 is the instant the marker writes the reason; a marker killed there leaves no reason.
    for (int i = 0; i < 1000 && shared_->broken.load(std::memory_order_acquire) == 2; ++i) {
        std::this_thread::sleep_for(std::chrono::microseconds(10));
    }
    const std::string_view reason = text_of(shared_->broken_reason, sizeof shared_->broken_reason);
    return Error{Errc::broken,
                 reason.empty() ? fmt::format("{}: port '{}' is broken (the user that marked it died before writing "
                                              "why); remove it with Segment::remove_port and recreate it",
                                              op, name_)
                                : fmt::format("{}: {}", op, reason),
                 0};
}

Result<void> Port::check_events(std::string_view op) {
    if (shared_ == nullptr) {
        return make_error(Errc::invalid_argument, "{}: the port is closed", op);
    }
    if (attachment_->forked()) {
        return std::unexpected(shm_detail::forked_error(*attachment_, fmt::format("{}: port '{}'", op, name_)));
    }
    if (const std::uint32_t state = shared_->broken.load(std::memory_order_acquire); state == 1 || state == 2) {
        return std::unexpected(broken_error(op));
    } else if (state != 0) {
        return make_error(Errc::corrupted,
                          "{}: port '{}': its broken flag holds {} (strata writes only 0, 1 or 2, and 2 only for "
                          "the instant a reason is written): the port was overwritten; remove it",
                          op, name_, state);
    }
    const std::uint64_t deaths = shared_->deaths.load(std::memory_order_acquire);
    if (deaths == seen_deaths_) {
        return {};
    }
    // Every death since this user last looked, oldest first (the last kDeathNotes of them).
    const std::uint64_t missed = deaths - seen_deaths_;
    const std::uint64_t shown = std::min<std::uint64_t>(missed, shm_detail::kDeathNotes);
    std::string notes = missed > shown ? fmt::format("{} users died; the last {}: ", missed, shown) : "";
    for (std::uint64_t d = deaths - shown; d < deaths; ++d) {
        const char* note = shared_->death_notes[d % shm_detail::kDeathNotes];
        notes +=
            fmt::format("{}{}", d == deaths - shown ? "" : "; then ", text_of(note, sizeof shared_->death_notes[0]));
    }
    seen_deaths_ = deaths;
    return make_error(Errc::peer_dead, "{}: port '{}': {}", op, name_, notes);
}

void Port::signal(bool for_slot) noexcept {
    if (for_slot) {
        bump_and_wake(shared_->freed, shared_->free_waiters);
    } else {
        bump_and_wake(shared_->published, shared_->publish_waiters);
    }
    const shm_detail::MpiWaiterOps* mpi = sync_ == PortSync::mpi ? shm_detail::mpi_waiter() : nullptr;
    if (mpi == nullptr) {
        return;
    }
    // Freed slots wake the producers, published messages the consumers; each rank once.
    PortPeer* table = for_slot ? shared_->producers : shared_->consumer_peers;
    const unsigned count = for_slot ? shm_detail::kMaxPortPeers : shared_->consumers;
    std::array<std::uint32_t, shm_detail::kMaxPortPeers> ranks{};
    unsigned n = 0;
    for (unsigned i = 0; i < count; ++i) {
        const std::uint32_t state = std::atomic_ref<std::uint32_t>(table[i].state).load(std::memory_order_acquire);
        const std::uint32_t rank = std::atomic_ref<std::uint32_t>(table[i].mpi_rank).load(std::memory_order_relaxed);
        if (state != shm_detail::peer_active || rank == 0 ||
            std::find(ranks.begin(), ranks.begin() + n, rank) != ranks.begin() + n) {
            continue;
        }
        ranks[n++] = rank;
        mpi->notify(static_cast<int>(rank - 1), mpi_tag_ + (for_slot ? 1 : 0));
    }
}

// Waits until the futex word moves on from `seen`, the deadline passes, or a
// liveness check (every 20 ms) finds a dead user.
Result<void> Port::wait(std::string_view op, std::uint32_t seen, bool for_slot,
                        std::chrono::steady_clock::time_point deadline,
                        std::chrono::steady_clock::time_point* next_check) {
    std::atomic<std::uint32_t>& word = for_slot ? shared_->freed : shared_->published;
    std::atomic<std::uint32_t>& waiters = for_slot ? shared_->free_waiters : shared_->publish_waiters;
    const auto tick = std::chrono::nanoseconds(shm_detail::kLivenessTickNs);
    // A zero timeout (a probe) returns at once, without spinning or sleeping first.
    if (deadline != std::chrono::steady_clock::time_point::max() && std::chrono::steady_clock::now() >= deadline) {
        return make_error(Errc::timeout, "{}: port '{}': nothing {} within the timeout", op, name_,
                          for_slot ? "was released (every slot is in use)" : "arrived");
    }
    for (;;) {
        if (sync_ == PortSync::mpi) {
            // Waits for a peer's zero-byte message; a message sent before we got
            // here is still queued, so no wake-up is lost.
            const auto now = std::chrono::steady_clock::now();
            const auto until = std::min(deadline, *next_check);
            const long ns =
                until > now
                    ? static_cast<long>(std::chrono::duration_cast<std::chrono::nanoseconds>(until - now).count())
                    : 0;
            if (word.load(std::memory_order_acquire) == seen && ns > 0) {
                shm_detail::mpi_waiter()->wait(mpi_tag_ + (for_slot ? 1 : 0), ns);
            }
        } else if (sync_ == PortSync::busy_poll) {
            for (int spin = 0; spin < 4096; ++spin) {
                if (word.load(std::memory_order_acquire) != seen) {
                    return {};
                }
                strata::core::cpu_relax();
            }
            // Give the core away now and then: with more spinners than cores the
            // producer we wait for may need it.
            sched_yield();
        } else {
            waiters.fetch_add(1, std::memory_order_seq_cst);
            const auto now = std::chrono::steady_clock::now();
            const auto until = std::min(deadline, *next_check);
            const long ns =
                until > now
                    ? static_cast<long>(std::chrono::duration_cast<std::chrono::nanoseconds>(until - now).count())
                    : 0;
            if (word.load(std::memory_order_seq_cst) == seen && ns > 0) {
                shm_detail::futex_wait(&word, seen, ns);
            }
            waiters.fetch_sub(1, std::memory_order_seq_cst);
        }
        if (word.load(std::memory_order_acquire) != seen) {
            return {};
        }
        const auto now = std::chrono::steady_clock::now();
        if (now >= *next_check) {
            *next_check = now + tick;
            recover_dead_peers();
            if (auto ok = check_events(op); !ok) {
                return ok;
            }
            if (shared_->lock.owner.load() != 0 && !attachment_->alive(shared_->lock.owner.load())) {
                if (auto locked = lock(op); !locked) {
                    return locked;
                }
                unlock();
            }
        }
        if (now >= deadline) {
            return make_error(Errc::timeout, "{}: port '{}': nothing {} within the timeout", op, name_,
                              for_slot ? "was released (every slot is in use)" : "arrived");
        }
    }
}

}  // namespace strata
