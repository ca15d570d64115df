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
using shm_detail::copy_text;
using shm_detail::drop_holder;
using shm_detail::holders_for;
using shm_detail::PortPeer;
using shm_detail::PortShared;
using shm_detail::PortSlot;
using shm_detail::text_of;

namespace {

std::atomic<shm_testing::CrashHook> g_crash_hook{nullptr};

constexpr std::uint64_t kForeverNs = static_cast<std::uint64_t>(-1);

Result<void> check_shape(std::string_view name, const PortShared& p, const PortOptions& o) {
    if (o.slots && *o.slots != p.slots) {
        return make_error(Errc::invalid_argument, "Segment::port: slots={}: port '{}' exists with {} slots", *o.slots,
                          name, p.slots);
    }
    if (o.slot_bytes && *o.slot_bytes != p.slot_bytes) {
        return make_error(Errc::invalid_argument,
                          "Segment::port: slot_bytes={}: port '{}' exists with {} bytes per slot", *o.slot_bytes, name,
                          p.slot_bytes);
    }
    if (o.consumers && *o.consumers != p.consumers) {
        return make_error(Errc::invalid_argument, "Segment::port: consumers={}: port '{}' exists with {} consumers",
                          *o.consumers, name, p.consumers);
    }
    return {};
}

std::string_view family_name(std::uint32_t family) {
    return family == shm_detail::sync_mpi ? "mpi" : "blocking|busy_poll (through the segment)";
}

Result<void> check_sync(std::string_view name, const PortShared& p, PortSync sync) {
    const std::uint32_t want = sync == PortSync::mpi ? shm_detail::sync_mpi : shm_detail::sync_segment;
    if (p.sync_family != want) {
        return make_error(Errc::invalid_argument,
                          "Segment::port: sync={}: port '{}' exists with sync={}; every user of a port must wait "
                          "the same way (all through MPI or all through the segment)",
                          to_string(sync), name, family_name(p.sync_family));
    }
    return {};
}

// Wake-ups of different ports share one communicator: each port gets its own
// pair of tags (a collision would only cost a spurious wake-up or one tick).
int mpi_tag_of(std::uint64_t segment_id, std::uint64_t offset, int tag_ub) {
    const std::uint64_t pairs = static_cast<std::uint64_t>(std::max(tag_ub, 3) - 1) / 2;
    const std::uint64_t h = (segment_id * 0x9E3779B97F4A7C15ULL) ^ (offset * 0xC2B2AE3D27D4EB4FULL);
    return static_cast<int>(((h >> 17U) % pairs) * 2);
}

shm_detail::ObjectSpec port_spec(std::size_t bytes) {
    return {bytes, 64, type_id<PortShared>(), type_name<PortShared>()};
}

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

// ---- opening -------------------------------------------------------------

Result<Port> Segment::port(std::string_view name, PortRole role) {
    return port(name, role, PortOptions{});
}

Result<Port> Segment::port(std::string_view name, PortRole role, const PortOptions& options) {
    constexpr std::string_view op = "Segment::port";
    if (auto ok = shm_detail::usable(attachment_.get(), op, true); !ok) {
        return std::unexpected(ok.error());
    }
    if (name.empty() || name.size() > 200 || name.find('\0') != std::string_view::npos) {
        return make_error(Errc::invalid_argument, "{}: name='{}': a port name has 1..200 characters, no NUL", op, name);
    }
    if (role != PortRole::producer && role != PortRole::consumer) {
        return make_error(Errc::invalid_argument, "{}: role={}: not a PortRole", op, static_cast<int>(role));
    }
    if (options.sync != PortSync::blocking && options.sync != PortSync::busy_poll && options.sync != PortSync::mpi) {
        return make_error(Errc::invalid_argument, "{}: sync={}: not a PortSync", op, static_cast<int>(options.sync));
    }
    int mpi_rank = -1;
    if (options.sync == PortSync::mpi) {
        const shm_detail::MpiWaiterOps* mpi = shm_detail::mpi_waiter();
        if (mpi == nullptr) {
            return make_error(Errc::unsupported,
                              "{}: sync=mpi: no MPI waiter is registered: link the program with libstrata-mpi "
                              "(CMake target strata::mpi) or use sync=blocking|busy_poll",
                              op);
        }
        char why[256] = {};
        mpi_rank = mpi->rank(why, sizeof why);
        if (mpi_rank < 0) {
            return make_error(Errc::invalid_argument, "{}: sync=mpi: {}", op, text_of(why, sizeof why));
        }
    }
    const unsigned slots = options.slots.value_or(4);
    const std::size_t slot_bytes = options.slot_bytes.value_or(0);
    const unsigned consumers = options.consumers.value_or(1);
    if (slots < 1 || slots > shm_detail::kMaxPortSlots) {
        return make_error(Errc::invalid_argument, "{}: slots={}: must be in 1..{}", op, slots,
                          shm_detail::kMaxPortSlots);
    }
    if (slot_bytes > shm_detail::kMaxSlotBytes) {
        return make_error(Errc::invalid_argument, "{}: slot_bytes={}: must be at most {} (1 GiB)", op, slot_bytes,
                          shm_detail::kMaxSlotBytes);
    }
    if (consumers < 1 || consumers > shm_detail::kMaxPortPeers) {
        return make_error(Errc::invalid_argument, "{}: consumers={}: must be in 1..{}", op, consumers,
                          shm_detail::kMaxPortPeers);
    }

    shm_detail::Attachment& a = *attachment_;
    const std::string object_name = fmt::format("strata.port.{}", name);
    const std::size_t bytes = shm_detail::port_bytes(slots, slot_bytes);
    auto construct = [&](void* place) {
        auto* p = ::new (place) PortShared();
        p->slots = slots;
        p->consumers = consumers;
        p->slot_bytes = slot_bytes;
        p->sync_family = options.sync == PortSync::mpi ? shm_detail::sync_mpi : shm_detail::sync_segment;
        auto* payload = reinterpret_cast<std::byte*>(p->slot_array() + slots);
        payload += (64 - reinterpret_cast<std::uintptr_t>(payload) % 64) % 64;
        const std::size_t stride = (slot_bytes + 63) / 64 * 64;
        for (unsigned i = 0; i < slots; ++i) {
            auto* s = ::new (p->slot_array() + i) PortSlot();
            s->payload_offset = static_cast<std::uint64_t>(payload + i * stride - a.base);
        }
    };
    auto placed =
        shm_detail::place_object(a, op, object_name, port_spec(bytes), &invoke<decltype(construct)>, &construct);
    if (!placed) {
        return std::unexpected(placed.error());
    }
    auto* shared = static_cast<PortShared*>(*placed);
    if (auto ok = check_shape(name, *shared, options); !ok) {
        return std::unexpected(ok.error());
    }
    if (auto ok = check_sync(name, *shared, options.sync); !ok) {
        return std::unexpected(ok.error());
    }

    Port port;
    port.attachment_ = &a;
    port.shared_ = shared;
    port.name_ = std::string(name);
    port.role_ = role;
    port.sync_ = options.sync;
    port.token_ = a.token;
    if (options.sync == PortSync::mpi) {
        port.mpi_tag_ =
            mpi_tag_of(a.header->segment_id, static_cast<std::uint64_t>(reinterpret_cast<std::byte*>(shared) - a.base),
                       shm_detail::mpi_waiter()->tag_ub());
    }
    // A consumer index a dead consumer still holds is freed first, so its
    // replacement is not refused as busy.
    port.recover_dead_peers();
    if (auto locked = port.lock(op); !locked) {
        return std::unexpected(locked.error());
    }
    PortPeer* table = role == PortRole::producer ? shared->producers : shared->consumer_peers;
    const unsigned limit = role == PortRole::producer ? shm_detail::kMaxPortPeers : shared->consumers;
    PortPeer* chosen = nullptr;
    // Consumers take an index never used first: messages already sent wait for it.
    for (unsigned pass = 0; pass < 2 && chosen == nullptr; ++pass) {
        for (unsigned i = 0; i < limit; ++i) {
            PortPeer& peer = table[i];
            const bool fits = pass == 0 ? peer.state == shm_detail::peer_never : peer.state != shm_detail::peer_active;
            if (fits) {
                chosen = &peer;
                port.index_ = i;
                break;
            }
        }
    }
    if (chosen == nullptr) {
        port.unlock();
        port.shared_ = nullptr;
        return make_error(Errc::busy, "{}: role={}: port '{}' already has {} {}s attached", op, to_string(role), name,
                          limit, to_string(role));
    }
    if (role == PortRole::consumer && chosen->state != shm_detail::peer_never) {
        chosen->join_seq = shared->write_seq;  // a replacement consumer starts with the next message
        shared->cursors[port.index_].next_seq = shared->write_seq;
    }
    chosen->token = a.token;
    chosen->mpi_rank = mpi_rank >= 0 ? static_cast<std::uint32_t>(mpi_rank) + 1 : 0;
    shm_detail::kill_step();  // the join's steps (port_layout.hpp): fields | state | counts
    chosen->state = shm_detail::peer_active;
    shm_detail::kill_step();
    shm_detail::crash_point(static_cast<int>(shm_testing::CrashPoint::port_peer_joining));
    if (role == PortRole::producer) {
        ++shared->producers_active;
        ++shared->producers_joined;
    }
    port.seen_deaths_ = shared->deaths.load();
    port.unlock();
    return port;
}

Result<void> Segment::remove_port(std::string_view name) {
    constexpr std::string_view op = "Segment::remove_port";
    if (auto ok = shm_detail::usable(attachment_.get(), op, true); !ok) {
        return std::unexpected(ok.error());
    }
    const std::string object_name = fmt::format("strata.port.{}", name);
    auto found = shm_detail::find_object(*attachment_, op, object_name, port_spec(0));
    if (!found) {
        return std::unexpected(found.error());
    }
    const auto* p = static_cast<const PortShared*>(*found);
    for (const auto* table : {p->producers, p->consumer_peers}) {
        for (unsigned i = 0; i < shm_detail::kMaxPortPeers; ++i) {
            const PortPeer& peer = table[i];
            if (peer.state == shm_detail::peer_active && attachment_->alive(peer.token)) {
                return make_error(Errc::busy, "{}: port '{}' is still used by {}", op, name,
                                  attachment_->describe(peer.token));
            }
        }
    }
    return shm_detail::erase_object(*attachment_, op, object_name, nullptr, port_spec(0), [](void*) {});
}

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
