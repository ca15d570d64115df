// SPDX-License-Identifier: MIT
// Per-core ready counts and statistics kept in user space, shared by the off
// and proc backends (the ebpf backend keeps the same numbers in a BPF map).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include "strata/monitor.hpp"

namespace strata::monitor::detail {

/// One cache line per core, so workers of different cores reading their
/// ready count do not share a line with counters being updated elsewhere.
struct alignas(64) ReadySlot {
    std::atomic<std::int32_t> ready{0};
};

/// Thread-safe: change() and stats() may run concurrently from any thread.
class CoreCounters {
public:
    explicit CoreCounters(int cores);

    [[nodiscard]] const std::atomic<std::int32_t>* ready_base() const noexcept { return &slots_[0].ready; }
    [[nodiscard]] static constexpr std::size_t stride() noexcept {
        return sizeof(ReadySlot) / sizeof(std::atomic<std::int32_t>);
    }

    /// Adds `delta` to the ready count of `core`, charging the time since the
    /// last change to "no ready" or "oversubscribed"; returns the new count.
    std::int32_t change(int core, int delta);
    void count_block(int core);
    void count_unblock(int core);
    void count_callback(int core);
    void set_context_switches(int core, std::uint64_t switches);

    /// The counters, with the interval since the last change charged up to now.
    [[nodiscard]] CoreStats stats(int core) const;

private:
    struct Times {
        std::uint64_t last_change_ns = 0;
        CoreStats stats;
    };
    int cores_;
    std::unique_ptr<ReadySlot[]> slots_;
    mutable std::mutex mutex_;
    std::unique_ptr<Times[]> times_;
};

}  // namespace strata::monitor::detail
