// SPDX-License-Identifier: MIT
// The backends behind Monitor::start, and the probe that auto uses.
// Internal to libstrata.
#pragma once

#include <memory>

#include "strata/monitor.hpp"

namespace strata::monitor::detail {

Result<std::unique_ptr<Monitor>> start_off(const Options& options, int cores);
Result<std::unique_ptr<Monitor>> start_proc(const Options& options, int cores, Monitor::Callback callback);
Result<std::unique_ptr<Monitor>> start_ebpf(const Options& options, int cores, Monitor::Callback callback,
                                            Monitor::Callback settled);

/// Loads the monitor's BPF program and unloads it again: why ebpf cannot run
/// here, or a one-line description of what loaded.
Result<std::string> probe_ebpf();

/// Nanoseconds of CLOCK_MONOTONIC, the clock BPF's bpf_ktime_get_ns reads.
std::uint64_t monotonic_ns() noexcept;

/// The scheduler state letter of /proc/self/task/<tid>/stat ('R', 'S', 'D', ...),
/// or 0 when the thread does not exist.
char thread_state(pid_t tid) noexcept;

/// Whether a /proc state letter means blocked: S (interruptible sleep) or D (uninterruptible).
constexpr bool is_blocked_state(char state) noexcept {
    return state == 'S' || state == 'D';
}

}  // namespace strata::monitor::detail
