// SPDX-License-Identifier: MIT
// The blocking monitor: which cores still have a ready worker (docs/monitor.md).
//
// After "User-Monitored Threads" (UMT, seed 002) without a kernel patch. A task
// runtime binds one worker thread per core and registers every worker (running
// and idle ones) here. The monitor keeps, per core, the number of registered
// workers that are ready (running or runnable, i.e. not blocked in the kernel)
// and calls `on_core_without_ready_worker(core)` when a core is left with none,
// so the runtime can wake an idle worker bound to that core. At scheduling
// points a worker reads ready(core) — a plain load, no system call — and
// returns to the idle pool when its core has more than one ready worker.
//
// Backends:
//   ebpf  a BPF CO-RE program on tp_btf/sched_switch and tp_btf/sched_wakeup,
//         tracking only registered thread ids. Block = the thread is switched
//         out, not preempted, with prev_state != TASK_RUNNING; unblock = a
//         wakeup of a thread recorded as blocked. Ready counts live in an
//         mmapped BPF array; the kernel sends one ring-buffer event only when a
//         core's count drops to zero. Nothing is pinned: the programs and maps
//         go away with the Monitor or with the process.
//   proc  a sampler thread reads /proc/self/task/<tid>/stat every
//         `proc_period` (state S or D = blocked, anything else = ready).
//   off   the baseline: counts only registrations, never calls back.
//
// Threshold: with `threshold` > 0 the callback fires only when the core has
// had no ready worker for `threshold` without an unblock in between, so short
// blocks do not wake idle workers. The ready counts themselves are never
// delayed.
//
// Example:
//
//   auto options = strata::monitor::options_from_env();   // STRATA_MONITOR=...
//   if (!options) { fmt::print(stderr, "{}\n", options.error().what()); return 1; }
//   auto monitor = strata::monitor::Monitor::start(*options, cores, [&](int core) { wake_idle(core); });
//   if (!monitor) { ... }
//   // in worker thread bound to `core`:
//   (*monitor)->register_worker(::gettid(), core);
//   if ((*monitor)->ready(core) > 1) go_idle();
//   (*monitor)->unregister_worker(::gettid());
//
// Errors: options_from_env names the variable and the value; start() fails
// with permission_denied / unsupported when the requested backend cannot run
// here and leaves nothing loaded or running.
//
// Thread safety: ready(), backend(), reason() and stats() may be called from
// any thread at any time. register_worker() and unregister_worker() may be
// called from any thread, but the counts are exact only when a worker
// registers and unregisters itself (tid = gettid(), while it runs on `core`):
// a thread registered by another thread is assumed ready unless
// /proc says it sleeps at that moment. The callback runs on the monitor's own
// thread (never a registered worker); it must be quick and must not destroy
// the Monitor (for ebpf that thread runs SCHED_FIFO priority 1 where the
// process may, so a loaded machine does not delay the callback; keep the
// callback short). Destruction joins that thread and must not race with other
// calls.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "strata/error.hpp"

namespace strata::monitor {

enum class Backend { off, proc, ebpf };

/// "off", "proc", "ebpf".
std::string_view to_string(Backend backend) noexcept;

struct Options {
    Backend backend = Backend::off;
    /// Blocks shorter than this do not trigger the callback (0: every block).
    std::chrono::nanoseconds threshold{0};
    /// The proc backend's sampling period (ignored by the others).
    std::chrono::microseconds proc_period{1000};
    /// Why this backend: "STRATA_MONITOR=proc", or what auto found.
    std::string reason;
};

/// Reads STRATA_MONITOR=auto|ebpf|proc|off (default auto),
/// STRATA_MONITOR_THRESHOLD_US (default 0) and STRATA_MONITOR_PERIOD_US
/// (default 1000, at least 10). auto picks ebpf when the monitor's BPF program
/// loads here, else proc, and says why in `reason`. A bad value is an
/// invalid_argument error naming the variable and the value.
Result<Options> options_from_env();

/// What auto would choose on this machine, and why (loads and unloads the
/// BPF program once; the result is cached for the process).
Options choose_auto();

/// Cumulative counters of one core since the monitor started. Times are
/// wall-clock nanoseconds. For proc they are sampled, so they are only as
/// fine as the period.
struct CoreStats {
    std::uint64_t blocks = 0;             ///< registered workers that blocked
    std::uint64_t unblocks = 0;           ///< ... and were woken again
    std::uint64_t no_ready_ns = 0;        ///< time with no ready registered worker
    std::uint64_t oversubscribed_ns = 0;  ///< time with more than one ready worker
    /// Wakeups of a blocked worker that found another ready worker on its
    /// core; and the part of oversubscribed_ns during which some woken worker
    /// had not yet run since its wakeup, i.e. waited for its CPU rather than
    /// ran (ebpf only; 0 elsewhere).
    std::uint64_t oversubscribing_wakeups = 0;
    std::uint64_t oversubscribed_wait_ns = 0;
    std::uint64_t context_switches = 0;  ///< switches away from registered workers (ebpf: all; proc: from /proc)
    std::uint64_t callbacks = 0;         ///< times on_core_without_ready_worker ran for this core
    /// Wakeup events (notify_when_woken) that reached the monitor's thread,
    /// and the time from each wakeup to its handling there, summed (ebpf only).
    std::uint64_t woken_events = 0;
    std::uint64_t woken_event_latency_ns = 0;
};

class Monitor {
public:
    using Callback = std::function<void(int core)>;

    /// Starts the backend for cores 0..cores-1. Errors: invalid_argument for
    /// cores < 1 or a negative threshold/period; permission_denied or
    /// unsupported when BPF cannot be loaded (ebpf) or /proc is not readable
    /// (proc).
    ///
    /// `on_core_settled(core)` runs on the same thread, once after each
    /// notify_when_one_ready(core), when a block leaves the core with one
    /// ready worker, and once after each notify_when_woken(core), when a
    /// wakeup gives the core a second ready worker.
    static Result<std::unique_ptr<Monitor>> start(const Options& options, int cores,
                                                  Callback on_core_without_ready_worker, Callback on_core_settled = {});

    virtual ~Monitor();
    Monitor(const Monitor&) = delete;
    Monitor& operator=(const Monitor&) = delete;

    /// Tracks thread `tid` (of this process) as a worker of `core`. Errors:
    /// invalid_argument for a core out of range or a tid that is not a thread
    /// of this process; already_exists if it is registered.
    Result<void> register_worker(pid_t tid, int core);

    /// Stops tracking `tid`; unknown tids are ignored.
    void unregister_worker(pid_t tid);

    /// Registered workers of `core` that are not blocked; 0 for a core out of
    /// range. A plain atomic load of memory the backend updates.
    [[nodiscard]] int ready(int core) const noexcept {
        if (core < 0 || core >= cores_) {
            return 0;
        }
        return static_cast<int>(ready_[static_cast<std::size_t>(core) * ready_stride_].load(std::memory_order_acquire));
    }

    [[nodiscard]] int cores() const noexcept { return cores_; }
    [[nodiscard]] Backend backend() const noexcept { return backend_; }
    [[nodiscard]] std::string_view reason() const noexcept { return reason_; }

    /// Counters of `core` (all zero for a core out of range).
    [[nodiscard]] CoreStats stats(int core) const;

    /// Asks for one on_core_settled(core) call when the next block of a
    /// worker of `core` takes its ready count from two to one (e.g. the
    /// worker that calls this is about to go idle while another runs). No
    /// system call. False when the backend cannot (proc, off): poll ready().
    bool notify_when_one_ready(int core) noexcept {
        if (core < 0 || core >= cores_) {
            return false;
        }
        return do_notify_when_one_ready(core);
    }

    /// Asks for one on_core_settled(core) call when the next wakeup of a
    /// blocked worker of `core` takes its ready count from one to two or more
    /// (e.g. a worker covers for a blocked one, which has just come back).
    /// The event is sent from the wakeup itself, before either thread runs.
    /// No system call. False when the backend cannot (proc, off).
    bool notify_when_woken(int core) noexcept {
        if (core < 0 || core >= cores_) {
            return false;
        }
        return do_notify_when_woken(core);
    }

    /// Makes registered worker `tid` (running, on `core`) the core's standby
    /// worker, or ends the standby with tid 0: while it stands by it is not
    /// counted in ready(core), its blocks and wakeups are ignored, and a
    /// block that leaves the core with no ready worker calls no callback —
    /// the standby worker, spinning on ready(), takes over itself. Call it
    /// from `tid` itself. No system call. False when the backend cannot
    /// (proc, off).
    bool set_standby(int core, pid_t tid) noexcept {
        if (core < 0 || core >= cores_) {
            return false;
        }
        return do_set_standby(core, tid);
    }

protected:
    Monitor(Backend backend, std::string reason, int cores)
        : backend_(backend), reason_(std::move(reason)), cores_(cores) {}

    virtual Result<void> do_register(pid_t tid, int core, bool blocked) = 0;
    virtual void do_unregister(pid_t tid) = 0;
    virtual CoreStats do_stats(int core) const = 0;
    virtual bool do_notify_when_one_ready(int /*core*/) noexcept { return false; }
    virtual bool do_notify_when_woken(int /*core*/) noexcept { return false; }
    virtual bool do_set_standby(int /*core*/, pid_t /*tid*/) noexcept { return false; }

    /// Where the backend keeps the ready counts: core c at ready[c * stride].
    void set_ready_counters(const std::atomic<std::int32_t>* ready, std::size_t stride) noexcept {
        ready_ = ready;
        ready_stride_ = stride;
    }

private:
    Backend backend_;
    std::string reason_;
    int cores_;
    const std::atomic<std::int32_t>* ready_ = nullptr;
    std::size_t ready_stride_ = 1;
};

}  // namespace strata::monitor
