// SPDX-License-Identifier: MIT
// Ports: hand objects from producer to consumer processes through a Segment
// without copying them (docs/shm.md).
//
// A port is a ring of `slots` message slots in the segment. A producer loans
// a slot, fills it (inline bytes, up to `slot_bytes`, and/or a Handle to an
// object of the segment) and commits it; every consumer receives every
// message in order (fan-out to `consumers` consumers), and the slot is reused
// only when each of them released it - so a producer never overwrites what a
// consumer still reads, and a slow consumer holds producers back (backpressure).
// Any number of producers may feed one port (fan-in); messages keep the order
// of their loans.
//
//   auto out = seg->port("frames", strata::PortRole::producer, {.slots = 4, .slot_bytes = 4096});
//   auto loan = out->loan();                      // waits while every slot is in use
//   std::memcpy(loan->bytes().data(), frame, n);
//   out->commit(std::move(*loan), n);
//
//   auto in = seg->port("frames", strata::PortRole::consumer);
//   auto sample = in->recv();                     // waits for the next message
//   use(sample->bytes());                         // released when `sample` goes
//
// send(object) / recv<T>() hand over a Handle to a segment object (save/load).
//
// Waiting: PortSync::blocking sleeps on a futex; busy_poll spins (lowest
// latency, burns a core). Every wait checks the other users' liveness at
// least every 20 ms. PortSync::mpi keeps the data in the segment's slots but
// waits for, and wakes peers with, zero-byte MPI messages (every user an MPI
// rank of one job); it needs the program linked with libstrata-mpi and MPI
// initialized, else Segment::port fails naming sync=mpi and the cause. All
// users of a port wait through the segment (blocking, busy_poll) or all
// through MPI: mixing the two is refused.
//
// Crash safety: when a user of the port dies, the next call of every other
// user returns peer_dead once (within 1 s, also for a producer that never
// has to wait), naming the dead user and what was recovered: a producer that
// died between loan and commit loses that message (consumers skip it), a
// consumer that died releases what it held and leaves the fan-out (a
// replacement consumer may then open the port). A user that died holding the
// port's lock leaves the port broken: every call fails with `broken` naming
// it until Segment::remove_port(). When every producer has closed and every
// message was received, recv() returns not_found ("end of stream"); when
// every producer died, peer_dead.
//
// fork: a child forked while its parent holds a Port inherits a copy that is
// not a user: every call through it fails (invalid_argument) and destroying
// it changes nothing the parent sees.
//
// Thread safety: a Port, Loan or Sample is used by one thread at a time;
// Loans and Samples must not outlive their Port, nor a Port its Segment.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "strata/error.hpp"
#include "strata/shm/handle.hpp"
#include "strata/shm/segment.hpp"

namespace strata {

enum class PortRole { producer, consumer };
enum class PortSync { blocking, busy_poll, mpi };

std::string_view to_string(PortRole role) noexcept;
std::string_view to_string(PortSync sync) noexcept;
Result<PortRole> parse_port_role(std::string_view text, std::string_view param = "role");
Result<PortSync> parse_port_sync(std::string_view text, std::string_view param = "sync");

/// The shape of a port and how this user waits. The first user creates the
/// port with its shape (unset fields take the defaults shown); a later user
/// adopts the existing shape, and a field it sets must match it.
struct PortOptions {
    std::optional<unsigned> slots = std::nullopt;  ///< messages in flight, 1..1024 (default 4)
    std::optional<std::size_t> slot_bytes =
        std::nullopt;  ///< inline payload bytes per slot, 0..1 GiB (default 0: handles only)
    std::optional<unsigned> consumers =
        std::nullopt;  ///< fan-out: every message goes to this many consumers, 1..64 (default 1)
    PortSync sync = PortSync::blocking;
};

/// The shape of an existing port.
struct PortShape {
    unsigned slots = 0;
    std::size_t slot_bytes = 0;
    unsigned consumers = 0;
};

namespace shm_detail {
struct PortShared;
struct PortSlot;
}  // namespace shm_detail

class Port;

/// A slot loaned to a producer; commit it or let it go (the message is dropped).
class Loan {
public:
    Loan(Loan&& other) noexcept;
    Loan& operator=(Loan&& other) noexcept;
    Loan(const Loan&) = delete;
    Loan& operator=(const Loan&) = delete;
    ~Loan();

    [[nodiscard]] std::span<std::byte> bytes() const noexcept;  ///< slot_bytes of inline payload
    [[nodiscard]] std::uint64_t sequence() const noexcept { return sequence_; }
    /// The handle the consumers will get with the message.
    void set_handle(const Handle& handle) noexcept;

private:
    friend class Port;
    Loan(Port* port, std::uint64_t sequence, shm_detail::PortSlot* slot) noexcept
        : port_(port), sequence_(sequence), slot_(slot) {}
    Port* port_ = nullptr;
    std::uint64_t sequence_ = 0;
    shm_detail::PortSlot* slot_ = nullptr;
};

/// A received message; released when destroyed or by Port::release.
class Sample {
public:
    Sample(Sample&& other) noexcept;
    Sample& operator=(Sample&& other) noexcept;
    Sample(const Sample&) = delete;
    Sample& operator=(const Sample&) = delete;
    ~Sample();

    [[nodiscard]] std::span<const std::byte> bytes() const noexcept;  ///< the committed inline bytes
    [[nodiscard]] const Handle& handle() const noexcept;
    [[nodiscard]] std::uint64_t sequence() const noexcept { return sequence_; }
    /// The object behind handle(), loaded (and checked) as a T.
    template <class T>
    Result<T*> get() const;

private:
    friend class Port;
    Sample(Port* port, std::uint64_t sequence, shm_detail::PortSlot* slot) noexcept
        : port_(port), sequence_(sequence), slot_(slot) {}
    Port* port_ = nullptr;
    std::uint64_t sequence_ = 0;
    shm_detail::PortSlot* slot_ = nullptr;
};

/// A received object: the sample that keeps its slot and the loaded pointer.
template <class T>
struct Received {
    Sample sample;
    T* object;
    T& operator*() const noexcept { return *object; }
    T* operator->() const noexcept { return object; }
};

class Port {
public:
    using Timeout = std::chrono::nanoseconds;
    static constexpr Timeout forever = Timeout::max();

    Port(Port&& other) noexcept;
    Port& operator=(Port&& other) noexcept;
    Port(const Port&) = delete;
    Port& operator=(const Port&) = delete;
    /// close(); an error is logged, never thrown.
    ~Port();

    [[nodiscard]] const std::string& name() const noexcept { return name_; }
    [[nodiscard]] PortRole role() const noexcept { return role_; }
    [[nodiscard]] PortSync sync() const noexcept { return sync_; }
    [[nodiscard]] PortShape shape() const noexcept;
    /// This user's index among the port's producers or consumers.
    [[nodiscard]] unsigned index() const noexcept { return index_; }

    /// Producer: reserves the next slot, waiting while every slot is in use.
    Result<Loan> loan(Timeout timeout = forever);
    /// Producer: publishes the loaned slot with `used` inline bytes (default all).
    Result<void> commit(Loan&& loan, std::size_t used = static_cast<std::size_t>(-1));
    /// Producer: loan + set_handle + commit.
    Result<void> send(const Handle& handle, Timeout timeout = forever);
    /// Producer: sends a handle to `object`, an object of this port's segment.
    template <class T>
    Result<void> send(const T& object, Timeout timeout = forever) {
        auto handle = save_raw(&object, shm_detail::spec_of<T>());
        if (!handle) {
            return std::unexpected(std::move(handle.error()));
        }
        return send(*handle, timeout);
    }

    /// Consumer: the next message, waiting for it.
    Result<Sample> recv(Timeout timeout = forever);
    /// Consumer: the next message's object, loaded as a T.
    template <class T>
    Result<Received<T>> recv(Timeout timeout = forever) {
        auto sample = recv(timeout);
        if (!sample) {
            return std::unexpected(std::move(sample.error()));
        }
        auto object = sample->template get<T>();
        if (!object) {
            return std::unexpected(std::move(object.error()));
        }
        return Received<T>{std::move(*sample), *object};
    }
    /// Consumer: lets the producers reuse the sample's slot.
    Result<void> release(Sample&& sample);

    /// Leaves the port: a consumer releases what it holds and leaves the fan-out,
    /// a producer that is the last one ends the stream.
    Result<void> close();

    /// Counters of this user: messages committed (producer) or received (consumer).
    [[nodiscard]] std::uint64_t messages() const noexcept { return messages_; }

private:
    friend class Segment;
    friend class Loan;
    friend class Sample;
    Port() = default;

    Result<Handle> save_raw(const void* object, const shm_detail::ObjectSpec& spec) const;
    Result<void*> load_raw(const Handle& handle, const shm_detail::ObjectSpec& spec) const;
    Result<void> check_events(std::string_view op);
    /// Takes the port's lock; when its holder died, takes it over and heals the port first.
    Result<void> lock(std::string_view op);
    void unlock() noexcept;
    Result<void> heal(std::string_view op, std::uint64_t dead_holder);
    void mark_broken(const std::string& reason);
    [[nodiscard]] Error broken_error(std::string_view op) const;
    void report_death(const std::string& text);
    void recover_locked(std::uint64_t dead_holder, const std::string& repaired, bool* freed);
    void report_holder_death(std::uint64_t dead_holder, const std::string& repaired, bool* freed);
    Result<void> wait(std::string_view op, std::uint32_t seen, bool for_slot,
                      std::chrono::steady_clock::time_point deadline,
                      std::chrono::steady_clock::time_point* next_check);
    void recover_dead_peers();
    /// Moves a futex word on and wakes its waiters (futex, or MPI messages for sync=mpi).
    void signal(bool for_slot) noexcept;
    void cancel(std::uint64_t sequence, shm_detail::PortSlot* slot) noexcept;
    void release_slot(std::uint64_t sequence, shm_detail::PortSlot* slot) noexcept;
    [[nodiscard]] std::span<std::byte> payload(const shm_detail::PortSlot* slot) const noexcept;

    shm_detail::Attachment* attachment_ = nullptr;
    shm_detail::PortShared* shared_ = nullptr;
    std::string name_;
    PortRole role_ = PortRole::producer;
    PortSync sync_ = PortSync::blocking;
    unsigned index_ = 0;
    std::uint64_t token_ = 0;
    std::uint64_t seen_deaths_ = 0;
    std::uint64_t messages_ = 0;
    /// When loan() next checks the other users' liveness (steady clock, ns).
    std::int64_t next_liveness_ns_ = 0;
    int mpi_tag_ = 0;  ///< sync=mpi: tag of "published" wake-ups; +1 for "freed"
};

template <class T>
Result<T*> Sample::get() const {
    auto raw = port_->load_raw(handle(), shm_detail::spec_of<T>());
    if (!raw) {
        return std::unexpected(std::move(raw.error()));
    }
    return static_cast<T*>(*raw);
}

}  // namespace strata
