// Where the slots of the producers that send through the shared segment live.
//
// Each such producer owns an outbox of `slots` slots; iteration i uses slot
// i % slots. A slot is a header page followed by the data, page-aligned so a
// slot's data never shares a page (or a cache line) with another's.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace strata::workflow::detail {

inline constexpr std::size_t kPage = 4096;

/// The header of one slot, in the segment; every word a futex may wait on is 32 bits.
struct SlotHeader {
    /// Iteration + 1 of the data in the slot (truncated to 32 bits); consumers wait on it.
    alignas(64) std::atomic<std::uint32_t> published;
    std::atomic<std::uint32_t> consumer_waiters;
    std::int64_t stamp_ns;  ///< CLOCK_MONOTONIC when the producer handed the slot over
    /// Consumers that have not yet released the slot; the producer waits on it before reuse.
    alignas(64) std::atomic<std::uint32_t> pending;
    std::atomic<std::uint32_t> producer_waiters;
};
static_assert(std::atomic<std::uint32_t>::is_always_lock_free);
static_assert(sizeof(SlotHeader) <= kPage);

inline constexpr std::size_t round_to_page(std::size_t bytes) {
    return (bytes + kPage - 1) / kPage * kPage;
}

inline constexpr std::size_t slot_bytes(std::size_t data_size) {
    return kPage + round_to_page(data_size);
}

inline constexpr std::size_t outbox_bytes(std::size_t data_size, std::uint32_t slots) {
    return slots * slot_bytes(data_size);
}

}  // namespace strata::workflow::detail
