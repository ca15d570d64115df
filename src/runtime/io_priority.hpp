// SPDX-License-Identifier: MIT
// The workers' I/O priority. A thread without an I/O priority of its own gets
// one derived from its CPU scheduling, and SCHED_IDLE maps to the kernel's
// idle I/O class, whose requests mq-deadline holds back while any other
// request is pending on the disk. A cover lowered to SCHED_IDLE (cover.cpp)
// that then wrote a checkpoint did so at idle I/O priority, and every task
// waiting for that checkpoint stalled (heat with O_DIRECT checkpoints ran
// 3.7x slower with the monitor on than off). So every worker takes an
// explicit I/O priority at start and keeps it whatever its CPU policy becomes.
#pragma once

namespace strata::runtime::detail {

// The kernel's I/O priority ABI (linux/ioprio.h, which C++ cannot include:
// it names a parameter `class`): a value is class << 13 | level.
inline constexpr int kIoClassNone = 0;
inline constexpr int kIoClassBestEffort = 2;
inline constexpr int kIoClassIdle = 3;
inline constexpr int kIoLevels = 8;

/// An I/O priority value of `io_class` at `level` (0 highest .. 7).
constexpr int io_priority_value(int io_class, int level) noexcept {
    return (io_class << 13) | level;
}
/// The class of an I/O priority value.
constexpr int io_priority_class(int ioprio) noexcept {
    return (ioprio >> 13) & 7;
}

/// The calling thread's I/O priority as the kernel applies it, or -1 (errno set).
int thread_io_priority() noexcept;

/// The I/O priority workers take: the calling thread's own when it has an
/// explicit class (an operator's `ionice`), else best-effort at the level its
/// nice value implies, as the kernel derives it. Call it where the runtime
/// starts.
int worker_io_priority() noexcept;

/// Gives the calling thread the I/O priority `ioprio`; 0, or the errno.
int set_thread_io_priority(int ioprio) noexcept;

}  // namespace strata::runtime::detail
