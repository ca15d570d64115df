// SPDX-License-Identifier: MIT
// Runtime statistics and the STRATA_STATS=1 table.
#include <chrono>

#include <fmt/format.h>

#include "scheduler.hpp"

namespace strata::runtime {

std::vector<CoreStats> Runtime::stats() const {
    std::vector<CoreStats> out;
    for (const auto& core : impl_->cores) {
        CoreStats s;
        s.cpu = core->cpu;
        s.tasks = core->tasks.load(std::memory_order_relaxed);
        s.steals = core->steals.load(std::memory_order_relaxed);
        s.surrenders = core->surrenders.load(std::memory_order_relaxed);
        s.wakes = core->wakes.load(std::memory_order_relaxed);
        s.context_switches = core->context_switches.load(std::memory_order_relaxed);
        s.covers = core->covers.load(std::memory_order_relaxed);
        s.restores = core->restores.load(std::memory_order_relaxed);
        s.cover_swaps = core->cover_swaps.load(std::memory_order_relaxed);
        s.kicks = core->kicks.load(std::memory_order_relaxed);
        s.suspend_requests = core->suspend_requests.load(std::memory_order_relaxed);
        s.suspends = core->suspends.load(std::memory_order_relaxed);
        s.suspend_declined = core->suspend_declined.load(std::memory_order_relaxed);
        s.suspend_timeouts = core->suspend_timeouts.load(std::memory_order_relaxed);
        s.suspend_handbacks = core->suspend_handbacks.load(std::memory_order_relaxed);
        s.suspended_time = std::chrono::nanoseconds(core->suspended_ns.load(std::memory_order_relaxed));
        s.suspended_max = std::chrono::nanoseconds(core->suspended_max_ns.load(std::memory_order_relaxed));
        s.suspend_latency = std::chrono::nanoseconds(core->suspend_latency_ns.load(std::memory_order_relaxed));
        s.suspend_latency_max = std::chrono::nanoseconds(core->suspend_latency_max_ns.load(std::memory_order_relaxed));
        s.scans = core->scans.load(std::memory_order_relaxed);
        s.standby_takeovers = core->standby_takeovers.load(std::memory_order_relaxed);
        {
            std::lock_guard lock(core->mutex);
            s.workers = static_cast<std::uint64_t>(core->workers);
        }
        if (impl_->monitored && impl_->monitor) {  // none after stop()
            s.monitor = impl_->monitor->counters(core->cpu);
        }
        out.push_back(s);
    }
    return out;
}

std::string Runtime::stats_report() const {
    auto ms = [](std::chrono::nanoseconds t) { return std::chrono::duration<double, std::milli>(t).count(); };
    std::string out = fmt::format("strata runtime statistics (monitor {}: {}; cover priority {})\n", monitor_backend(),
                                  monitor_reason(), cover_reason());
    out += fmt::format("{:>4} {:>10} {:>8} {:>8} {:>10} {:>10} {:>14} {:>16} {:>10} {:>6} {:>6} {:>7} {:>6}\n", "cpu",
                       "tasks", "steals", "blocks", "unblocks", "ctx-sw", "no-ready ms", "oversubscr. ms", "surrenders",
                       "wakes", "wrk", "covers", "kicks");
    for (const CoreStats& s : stats()) {
        out += fmt::format(
            "{:>4} {:>10} {:>8} {:>8} {:>10} {:>10} {:>14.3f} {:>16.3f} {:>10} {:>6} {:>6} {:>7} {:>6}\n", s.cpu,
            s.tasks, s.steals, s.monitor.blocks, s.monitor.unblocks, s.context_switches, ms(s.monitor.no_ready_time),
            ms(s.monitor.oversubscribed_time), s.surrenders, s.wakes, s.workers, s.covers, s.kicks);
    }
    return out;
}

}  // namespace strata::runtime
