// SPDX-License-Identifier: MIT
#include "core_counters.hpp"

#include "backends.hpp"

namespace strata::monitor::detail {

static_assert(sizeof(ReadySlot) == 64 && std::atomic<std::int32_t>::is_always_lock_free,
              "Monitor::ready() reads slot c at ready_base()[c * stride()]");

namespace {
void charge(CoreStats& stats, std::int32_t ready, std::uint64_t elapsed_ns) {
    if (ready <= 0) {
        stats.no_ready_ns += elapsed_ns;
    }
    if (ready > 1) {
        stats.oversubscribed_ns += elapsed_ns;
    }
}
}  // namespace

CoreCounters::CoreCounters(int cores)
    : cores_(cores),
      slots_(std::make_unique<ReadySlot[]>(static_cast<std::size_t>(cores))),
      times_(std::make_unique<Times[]>(static_cast<std::size_t>(cores))) {
    const auto now = monotonic_ns();
    for (int c = 0; c < cores_; ++c) {
        times_[static_cast<std::size_t>(c)].last_change_ns = now;
    }
}

std::int32_t CoreCounters::change(int core, int delta) {
    const auto index = static_cast<std::size_t>(core);
    const std::scoped_lock lock(mutex_);
    const auto now = monotonic_ns();
    auto& times = times_[index];
    const auto before = slots_[index].ready.load(std::memory_order_relaxed);
    charge(times.stats, before, now - times.last_change_ns);
    times.last_change_ns = now;
    const auto after = before + delta;
    slots_[index].ready.store(after, std::memory_order_release);
    return after;
}

void CoreCounters::count_block(int core) {
    const std::scoped_lock lock(mutex_);
    ++times_[static_cast<std::size_t>(core)].stats.blocks;
}

void CoreCounters::count_unblock(int core) {
    const std::scoped_lock lock(mutex_);
    ++times_[static_cast<std::size_t>(core)].stats.unblocks;
}

void CoreCounters::count_callback(int core) {
    const std::scoped_lock lock(mutex_);
    ++times_[static_cast<std::size_t>(core)].stats.callbacks;
}

void CoreCounters::set_context_switches(int core, std::uint64_t switches) {
    const std::scoped_lock lock(mutex_);
    times_[static_cast<std::size_t>(core)].stats.context_switches = switches;
}

CoreStats CoreCounters::stats(int core) const {
    if (core < 0 || core >= cores_) {
        return {};
    }
    const auto index = static_cast<std::size_t>(core);
    const std::scoped_lock lock(mutex_);
    auto stats = times_[index].stats;
    charge(stats, slots_[index].ready.load(std::memory_order_relaxed), monotonic_ns() - times_[index].last_change_ns);
    return stats;
}

}  // namespace strata::monitor::detail
