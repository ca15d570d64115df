// SPDX-License-Identifier: MIT
// Methods shm, copy-into, copy-from and copy over the shm layer
// (include/strata/shm.hpp): each producer owns a Port of its Segment whose
// slots carry the data inline (slot_bytes = data size + a stamp), so the
// producer writes into a loaned slot and consumers read the committed slot in
// place. The Port gives the slots, the backpressure, the reference-counted
// fan-out and the dead-peer errors.
//
// `spin` (Wait::busy_poll) polls a blocking port with zero timeouts instead
// of using PortSync::busy_poll: Port's busy_poll yields the core every 4096
// spins (also inside a zero-timeout call), which on a loaded machine costs a
// scheduler slice (~100 µs) per handoff.
#pragma once

#include <optional>

#include "ports.hpp"
#include "strata/shm.hpp"
#include "strata/workflow.hpp"

namespace strata::workflow::detail {

/// Bytes of a producer's slot: the data, then the 8-byte handoff stamp.
inline constexpr std::size_t port_slot_bytes(std::size_t data_size) {
    return data_size + 8;
}

/// What a segment needs for these ports (slots, headers, allocator slack).
std::size_t segment_bytes_for_ports(const Workflow& wf);

class PortOutput final : public OutputPort {
public:
    /// `copy_into`: the task writes a private buffer that publish() copies into the slot.
    PortOutput(Port port, std::size_t data_size, bool copy_into, Port::Timeout timeout, bool spin = false);
    Result<std::span<std::uint64_t>> buffer(std::uint64_t it) override;
    Result<void> publish(std::uint64_t it) override;
    /// publish(), and `committed` = the committed slot's words: the data, then the stamp.
    Result<void> publish(std::uint64_t it, std::span<const std::uint64_t>* committed);

private:
    Result<void> take_loan();

    Port port_;
    std::size_t data_size_;
    Port::Timeout timeout_;
    bool spin_;
    std::optional<Loan> loan_;
    std::vector<std::uint64_t> private_;  // empty unless copy-into
};

class PortInput final : public InputPort {
public:
    /// `copy_from`: receive() copies the slot into a private buffer and releases it at once.
    PortInput(Port port, std::size_t data_size, bool copy_from, Port::Timeout timeout, bool spin = false);
    Result<std::span<const std::uint64_t>> receive(std::uint64_t it, std::int64_t& stamp_ns) override;
    Result<void> release(std::uint64_t it) override;

private:
    Port port_;
    std::size_t data_size_;
    Port::Timeout timeout_;
    bool spin_;
    std::optional<Sample> sample_;
    std::vector<std::uint64_t> private_;  // empty unless copy-from
};

}  // namespace strata::workflow::detail
