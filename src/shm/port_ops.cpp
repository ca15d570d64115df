// SPDX-License-Identifier: MIT
// Port operations: loan, commit, send, recv, release, close; Loan and Sample.
#include <algorithm>
#include <chrono>

#include "shm/objects.hpp"
#include "shm/port_layout.hpp"
#include "shm/port_repair.hpp"
#include "strata/shm/port.hpp"
#include "strata/shm/testing.hpp"

namespace strata {

using shm_detail::drop_holder;
using shm_detail::holders_for;
using shm_detail::kill_step;
using shm_detail::PortPeer;
using shm_detail::PortShared;
using shm_detail::PortSlot;

namespace {

using Clock = std::chrono::steady_clock;

Clock::time_point deadline_of(Port::Timeout timeout, Clock::time_point now) {
    if (timeout == Port::forever || timeout > std::chrono::hours(24 * 365)) {
        return Clock::time_point::max();
    }
    return now + std::max(timeout, Port::Timeout::zero());
}

Result<void> need_role(std::string_view op, const Port& port, PortRole role) {
    if (port.role() != role) {
        return make_error(Errc::invalid_argument, "{}: port '{}' was opened as {}, this needs a {}", op, port.name(),
                          to_string(port.role()), to_string(role));
    }
    return {};
}

}  // namespace

Result<Loan> Port::loan(Timeout timeout) {
    constexpr std::string_view op = "Port::loan";
    if (auto ok = check_events(op); !ok) {
        return std::unexpected(ok.error());
    }
    if (auto ok = need_role(op, *this, PortRole::producer); !ok) {
        return std::unexpected(ok.error());
    }
    // A producer that never waits still learns of a dead consumer within a
    // tick, instead of filling slots for it and keeping its index taken.
    const auto start = Clock::now();
    const std::int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(start.time_since_epoch()).count();
    if (now >= next_liveness_ns_) {
        next_liveness_ns_ = now + shm_detail::kLivenessTickNs;
        recover_dead_peers();
        if (auto ok = check_events(op); !ok) {
            return std::unexpected(ok.error());
        }
    }
    const auto deadline = deadline_of(timeout, start);
    auto next_check = start + std::chrono::nanoseconds(shm_detail::kLivenessTickNs);
    for (;;) {
        const std::uint32_t seen = shared_->freed.load(std::memory_order_acquire);
        if (auto ok = lock(op); !ok) {
            return std::unexpected(ok.error());
        }
        const std::uint64_t s = shared_->write_seq;
        PortSlot& slot = shared_->slot(s);
        if (slot.state == shm_detail::slot_free) {
            // The loan's steps (port_layout.hpp): fields | state | write sequence.
            slot.sequence = s;
            slot.loaner = token_;
            slot.producer = index_;
            slot.holders = 0;
            slot.used = 0;
            slot.handle = Handle{};
            kill_step();
            slot.state = shm_detail::slot_loaned;
            kill_step();
            shm_detail::crash_point(static_cast<int>(shm_testing::CrashPoint::port_loan_claimed));
            shared_->write_seq = s + 1;
            unlock();
            return Loan(this, s, &slot);
        }
        unlock();
        if (auto ok = wait(op, seen, true, deadline, &next_check); !ok) {
            return std::unexpected(ok.error());
        }
    }
}

Result<void> Port::commit(Loan&& loan, std::size_t used) {
    constexpr std::string_view op = "Port::commit";
    if (loan.port_ != this || loan.slot_ == nullptr) {
        return make_error(Errc::invalid_argument, "{}: the loan is empty or belongs to another port than '{}'", op,
                          name_);
    }
    if (used != static_cast<std::size_t>(-1) && used > shared_->slot_bytes) {
        return make_error(Errc::invalid_argument, "{}: used={}: more than the {} bytes of a slot of port '{}'", op,
                          used, shared_->slot_bytes, name_);
    }
    PortSlot* slot = std::exchange(loan.slot_, nullptr);
    loan.port_ = nullptr;
    if (auto ok = lock(op); !ok) {
        return std::unexpected(ok.error());
    }
    if (slot->state != shm_detail::slot_loaned || slot->sequence != loan.sequence_ || slot->loaner != token_) {
        unlock();
        return make_error(Errc::internal, "{}: port '{}': message {} is no longer loaned to this producer", op, name_,
                          loan.sequence_);
    }
    // The commit's steps (port_layout.hpp): used, holders | state | ready.
    slot->used = used == static_cast<std::size_t>(-1) ? shared_->slot_bytes : used;
    slot->holders = holders_for(*shared_, slot->sequence);
    kill_step();
    slot->state = slot->holders == 0 ? shm_detail::slot_free : shm_detail::slot_committed;
    kill_step();
    if (slot->state == shm_detail::slot_committed) {
        shm_detail::crash_point(static_cast<int>(shm_testing::CrashPoint::port_commit_published));
        slot->ready.store(slot->sequence + 1, std::memory_order_release);
    }
    unlock();
    signal(false);
    ++messages_;
    return {};
}

Result<void> Port::send(const Handle& handle, Timeout timeout) {
    auto l = loan(timeout);
    if (!l) {
        return std::unexpected(l.error());
    }
    l->set_handle(handle);
    return commit(std::move(*l), 0);
}

Result<Sample> Port::recv(Timeout timeout) {
    constexpr std::string_view op = "Port::recv";
    if (auto ok = check_events(op); !ok) {
        return std::unexpected(ok.error());
    }
    if (auto ok = need_role(op, *this, PortRole::consumer); !ok) {
        return std::unexpected(ok.error());
    }
    const auto start = Clock::now();
    const auto deadline = deadline_of(timeout, start);
    auto next_check = start + std::chrono::nanoseconds(shm_detail::kLivenessTickNs);
    const std::uint64_t bit = 1ULL << index_;
    shm_detail::PortCursor& me = shared_->cursors[index_];
    for (;;) {
        const std::uint32_t seen = shared_->published.load(std::memory_order_acquire);
        // Fast path (port_layout.hpp): the next message is committed, so it is ours; no lock.
        if (PortSlot& next = shared_->slot(me.next_seq);
            next.ready.load(std::memory_order_acquire) == me.next_seq + 1) {
            const std::uint64_t s = me.next_seq++;
            ++messages_;
            return Sample(this, s, &next);
        }
        if (auto ok = lock(op); !ok) {
            return std::unexpected(ok.error());
        }
        bool freed = false;
        for (;;) {
            const std::uint64_t s = me.next_seq;
            PortSlot& slot = shared_->slot(s);
            if (slot.sequence == s && slot.state == shm_detail::slot_committed && (slot.holders & bit) != 0) {
                me.next_seq = s + 1;
                unlock();
                if (freed) {
                    signal(true);
                }
                ++messages_;
                return Sample(this, s, &slot);
            }
            const bool skipped = slot.sequence == s && slot.state == shm_detail::slot_abandoned;
            const bool not_mine = slot.sequence == s && slot.state == shm_detail::slot_committed;
            if (!skipped && !not_mine) {
                break;
            }
            freed |= drop_holder(slot, bit);
            me.next_seq = s + 1;
        }
        const bool drained = me.next_seq >= shared_->write_seq;
        const bool no_producer = shared_->producers_active == 0 && shared_->producers_joined > 0;
        const std::uint32_t died = shared_->producers_died;
        unlock();
        if (freed) {
            signal(true);
        }
        if (drained && no_producer) {
            if (auto ok = check_events(op); !ok) {
                return std::unexpected(ok.error());
            }
            if (died > 0) {
                return make_error(Errc::peer_dead, "{}: port '{}': every producer has gone and {} of them died", op,
                                  name_, died);
            }
            return make_error(Errc::not_found, "{}: port '{}': end of stream (every producer closed the port)", op,
                              name_);
        }
        if (auto ok = wait(op, seen, false, deadline, &next_check); !ok) {
            return std::unexpected(ok.error());
        }
    }
}

Result<void> Port::release(Sample&& sample) {
    if (sample.port_ != this || sample.slot_ == nullptr) {
        return make_error(Errc::invalid_argument,
                          "Port::release: the sample is empty or belongs to another port than '{}'", name_);
    }
    PortSlot* slot = std::exchange(sample.slot_, nullptr);
    sample.port_ = nullptr;
    release_slot(sample.sequence_, slot);
    return {};
}

void Port::release_slot(std::uint64_t sequence, PortSlot* slot) noexcept {
    if (shared_ == nullptr || attachment_->forked() || !lock("Port::release").has_value()) {
        return;
    }
    bool freed = false;
    if (slot->sequence == sequence) {
        freed = drop_holder(*slot, 1ULL << index_);
    }
    unlock();
    if (freed) {
        signal(true);
    }
}

void Port::cancel(std::uint64_t sequence, PortSlot* slot) noexcept {
    if (shared_ == nullptr || attachment_->forked() || !lock("Loan").has_value()) {
        return;
    }
    bool freed = false;
    if (slot->sequence == sequence && slot->state == shm_detail::slot_loaned && slot->loaner == token_) {
        slot->holders = holders_for(*shared_, sequence);
        kill_step();
        slot->state = slot->holders == 0 ? shm_detail::slot_free : shm_detail::slot_abandoned;
        freed = slot->holders == 0;
    }
    unlock();
    signal(false);
    if (freed) {
        signal(true);
    }
}

Result<void> Port::close() {
    if (shared_ == nullptr) {
        return {};
    }
    if (attachment_->forked()) {
        // A forked child's copy: the parent's place in the port is not ours to give up.
        shared_ = nullptr;
        attachment_ = nullptr;
        return {};
    }
    PortPeer& me = role_ == PortRole::producer ? shared_->producers[index_] : shared_->consumer_peers[index_];
    if (shared_->broken.load(std::memory_order_acquire) != 0) {
        // The lock may be held by the dead user: leave without it.
        me.state = shm_detail::peer_closed;
        shared_ = nullptr;
        attachment_ = nullptr;
        return {};
    }
    auto locked = lock("Port::close");
    if (!locked) {
        me.state = shm_detail::peer_closed;
        shared_ = nullptr;
        attachment_ = nullptr;
        return locked;
    }
    bool freed = false;
    if (me.state == shm_detail::peer_active && me.token == token_) {
        // The close's steps (port_layout.hpp): state | counts | slots.
        me.state = shm_detail::peer_closed;
        kill_step();
        shm_detail::crash_point(static_cast<int>(shm_testing::CrashPoint::port_peer_leaving));
        if (role_ == PortRole::producer) {
            --shared_->producers_active;
            kill_step();
            (void)shm_detail::abandon_loans(*shared_, token_, &freed);
        } else {
            for (unsigned k = 0; k < shared_->slots; ++k) {
                freed |= drop_holder(shared_->slot_array()[k], 1ULL << index_);
            }
        }
    }
    unlock();
    signal(false);
    if (freed) {
        signal(true);
    }
    shared_ = nullptr;
    attachment_ = nullptr;
    return {};
}

// ---- Loan and Sample --------------------------------------------------------

Loan::Loan(Loan&& other) noexcept
    : port_(std::exchange(other.port_, nullptr)),
      sequence_(other.sequence_),
      slot_(std::exchange(other.slot_, nullptr)) {}

Loan& Loan::operator=(Loan&& other) noexcept {
    if (this != &other) {
        if (port_ != nullptr && slot_ != nullptr) {
            port_->cancel(sequence_, slot_);
        }
        port_ = std::exchange(other.port_, nullptr);
        sequence_ = other.sequence_;
        slot_ = std::exchange(other.slot_, nullptr);
    }
    return *this;
}

Loan::~Loan() {
    if (port_ != nullptr && slot_ != nullptr) {
        port_->cancel(sequence_, slot_);
    }
}

std::span<std::byte> Loan::bytes() const noexcept {
    return slot_ == nullptr ? std::span<std::byte>{} : port_->payload(slot_);
}

void Loan::set_handle(const Handle& handle) noexcept {
    if (slot_ != nullptr) {
        slot_->handle = handle;
    }
}

Sample::Sample(Sample&& other) noexcept
    : port_(std::exchange(other.port_, nullptr)),
      sequence_(other.sequence_),
      slot_(std::exchange(other.slot_, nullptr)) {}

Sample& Sample::operator=(Sample&& other) noexcept {
    if (this != &other) {
        if (port_ != nullptr && slot_ != nullptr) {
            port_->release_slot(sequence_, slot_);
        }
        port_ = std::exchange(other.port_, nullptr);
        sequence_ = other.sequence_;
        slot_ = std::exchange(other.slot_, nullptr);
    }
    return *this;
}

Sample::~Sample() {
    if (port_ != nullptr && slot_ != nullptr) {
        port_->release_slot(sequence_, slot_);
    }
}

std::span<const std::byte> Sample::bytes() const noexcept {
    if (slot_ == nullptr) {
        return {};
    }
    return port_->payload(slot_).first(static_cast<std::size_t>(slot_->used));
}

const Handle& Sample::handle() const noexcept {
    static const Handle none{};
    return slot_ == nullptr ? none : slot_->handle;
}

}  // namespace strata
