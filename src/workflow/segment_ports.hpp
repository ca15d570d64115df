// Methods shm, copy-into, copy-from and copy: the producer's slots live in a
// shared segment (slot_layout.hpp). Fan-out is reference counted: a slot is
// reused only when every consumer released it. Waiting spins briefly and then
// sleeps on a futex (Wait::blocking), or only spins (Wait::busy_poll); a wait
// gives up with peer_dead after `timeout_ms` without progress, so a dead peer
// never hangs the survivors.
#pragma once

#include "ports.hpp"
#include "slot_layout.hpp"
#include "strata/workflow.hpp"

namespace strata::workflow::detail {

struct OutboxView {
    std::byte* base = nullptr;  ///< the outbox's first slot in this process's mapping
    std::size_t data_size = 0;
    std::uint32_t slots = 0;
    Wait wait = Wait::blocking;
    int timeout_ms = 10'000;

    [[nodiscard]] SlotHeader& header(std::uint64_t it) const noexcept;
    [[nodiscard]] std::uint64_t* data(std::uint64_t it) const noexcept;
};

class SegmentOutput final : public OutputPort {
public:
    /// `copy_into`: the task writes a private buffer that publish() copies into the slot.
    SegmentOutput(OutboxView box, std::uint32_t consumers, bool copy_into);
    Result<std::span<std::uint64_t>> buffer(std::uint64_t it) override;
    Result<void> publish(std::uint64_t it) override;

private:
    OutboxView box_;
    std::uint32_t consumers_;
    std::vector<std::uint64_t> private_;  // empty unless copy-into
};

class SegmentInput final : public InputPort {
public:
    /// `copy_from`: receive() copies the slot into a private buffer and releases the slot at once.
    SegmentInput(OutboxView box, bool copy_from);
    Result<std::span<const std::uint64_t>> receive(std::uint64_t it, std::int64_t& stamp_ns) override;
    void release(std::uint64_t it) override;

private:
    OutboxView box_;
    std::vector<std::uint64_t> private_;  // empty unless copy-from
};

}  // namespace strata::workflow::detail
