// SPDX-License-Identifier: MIT
// Cover priority idle+suspend (docs/runtime.md, issue 15): on the monitor's
// wakeup event for a core whose cover runs beside the woken worker, the
// monitor's thread sends the cover a real-time signal; its handler waits on
// a futex word, in the middle of the cover's task, until the runtime releases
// it. Released (lock-free, from any thread) when the core has no ready worker
// (the woken worker blocked again, parked or exited: the monitor's empty-core
// event, or the leader's scan), when a worker of the core finds no task (the
// woken worker may be waiting for the suspended cover's task), when the core
// is left with one active worker, and when the runtime stops. A suspension is
// bounded by kSuspendBound in case a release is lost (for example the
// monitor's thread blocked on a lock of the task's code held by the cover).
//
// Generation: the futex word is odd while a suspension is requested and is
// bumped to the next even value on release; a signal that arrives after its
// request was released finds it even and returns at once. The handler
// suspends only while the thread runs a task's own code (Worker::in_body),
// never inside the runtime, where it could hold a runtime lock.
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <mutex>

#include "core/log.hpp"
#include "core/sched_attr.hpp"
#include "cover.hpp"
#include "scheduler.hpp"

namespace strata::runtime {

namespace detail {
Worker*& current_worker() noexcept;
}

using detail::Core;
using detail::Worker;

namespace {

constexpr long kSuspendBoundNs = 100'000'000;  // 100 ms

int suspend_signal() noexcept {
    return SIGRTMIN + 3;
}

long futex(std::atomic<std::uint32_t>& word, int op, std::uint32_t value, const timespec* timeout) noexcept {
    static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t));
    return ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), op, value, timeout, nullptr, 0);
}

std::int64_t monotonic_ns() noexcept {
    timespec now{};
    ::clock_gettime(CLOCK_MONOTONIC, &now);
    return static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

// The policy the runtime gave the worker (cover.cpp), after a raise to
// SCHED_FIFO. Read again after the system call: set_priority() stores the
// flag after its own call, so a change that raced with this one is redone
// with the value it wrote. Raw system calls: async-signal-safe.
void restore_policy(Worker& worker) noexcept {
    const pid_t tid = worker.tid.load(std::memory_order_acquire);
    bool idle = worker.idle_priority.load(std::memory_order_acquire);
    for (int tries = 0; tries < 4; ++tries) {
        (void)detail::set_policy(tid, idle, worker.rt->suspend_nice);
        const bool now = worker.idle_priority.load(std::memory_order_acquire);
        if (now == idle) {
            return;
        }
        idle = now;
    }
}

// Ends the suspension request `request` of `self` from the cover's side (the
// runtime had not released it yet) and clears the core's record of it; false
// if the runtime released it first. Async-signal-safe: atomics only.
bool end_own_request(Worker& self, Core& core, std::uint32_t request) noexcept {
    std::uint32_t expected = request;
    if (!self.suspend_word.compare_exchange_strong(expected, request + 1, std::memory_order_acq_rel)) {
        return false;
    }
    Worker* mine = &self;
    core.suspended.compare_exchange_strong(mine, nullptr, std::memory_order_acq_rel);
    return true;
}

void raise_max(std::atomic<std::int64_t>& max, std::int64_t value) noexcept {
    std::int64_t seen = max.load(std::memory_order_relaxed);
    while (value > seen && !max.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
    }
}

// Adds `ns` to a sum and its maximum. Async-signal-safe: atomics only.
void account(std::atomic<std::int64_t>& sum, std::atomic<std::int64_t>& max, std::int64_t ns) noexcept {
    sum.fetch_add(ns, std::memory_order_relaxed);
    raise_max(max, ns);
}

// Async-signal-safe: atomics, clock_gettime and the futex and scheduling
// system calls only.
void on_suspend_signal(int /*signal*/) {
    const int saved_errno = errno;
    Worker* self = detail::current_worker();
    if (self != nullptr) {
        const std::uint32_t request = self->suspend_word.load(std::memory_order_acquire);
        if ((request & 1U) != 0) {
            Core& core = *self->core;
            if (self->in_body.load(std::memory_order_relaxed) == 0) {
                // Inside the runtime: not here; it surrenders at its next scheduling point.
                if (end_own_request(*self, core, request)) {
                    core.suspend_declined.fetch_add(1, std::memory_order_relaxed);
                }
            } else {
                core.suspends.fetch_add(1, std::memory_order_relaxed);
                const std::int64_t entered = monotonic_ns();
                account(core.suspend_latency_ns, core.suspend_latency_max_ns,
                        entered - self->suspend_sent_ns.load(std::memory_order_acquire));
                const std::int64_t deadline = entered + kSuspendBoundNs;
                while (self->suspend_word.load(std::memory_order_acquire) == request &&
                       !self->rt->stopping.load(std::memory_order_acquire)) {
                    const std::int64_t left = deadline - monotonic_ns();
                    if (left <= 0) {
                        if (end_own_request(*self, core, request)) {
                            core.suspend_timeouts.fetch_add(1, std::memory_order_relaxed);
                        }
                        break;
                    }
                    const timespec timeout{static_cast<time_t>(left / 1'000'000'000), left % 1'000'000'000};
                    (void)futex(self->suspend_word, FUTEX_WAIT_PRIVATE, request, &timeout);
                }
                account(core.suspended_ns, core.suspended_max_ns, monotonic_ns() - entered);
            }
        }
        // After the wait, not before: lowered while it runs, it would be
        // preempted before it sleeps and stay runnable. After every signal,
        // whether or not this request raised the cover: a raise for the next
        // request may land while this handler returns, and a cover left at
        // SCHED_FIFO runs its whole task ahead of the worker it covered for.
        restore_policy(*self);
    }
    errno = saved_errno;
}

}  // namespace

void Runtime::Impl::install_suspend_handler() {
    static std::once_flag once;
    std::call_once(once, [] {
        struct sigaction action {};
        action.sa_handler = on_suspend_signal;
        action.sa_flags = SA_RESTART;
        ::sigemptyset(&action.sa_mask);
        if (::sigaction(suspend_signal(), &action, nullptr) != 0) {
            strata::detail::log().warn("strata runtime: cannot install the idle+suspend signal handler: {}",
                                       describe_errno(errno));
        }
    });
}

// With core.mutex held: the cover was armed for the wakeup event and the core
// now has two ready workers. One suspension per core at a time.
void Runtime::Impl::suspend_cover(Core& core, Worker& cover) {
    Worker* none = nullptr;
    if (!core.suspended.compare_exchange_strong(none, &cover, std::memory_order_acq_rel)) {
        return;
    }
    std::uint32_t word = cover.suspend_word.load(std::memory_order_acquire);
    if ((word & 1U) != 0 || !cover.suspend_word.compare_exchange_strong(word, word + 1, std::memory_order_acq_rel)) {
        core.suspended.store(nullptr, std::memory_order_release);
        return;
    }
    cover.suspend_sent_ns.store(monotonic_ns(), std::memory_order_release);
    const pid_t tid = cover.tid.load(std::memory_order_acquire);
    // SCHED_FIFO first, then the signal: a cover that the woken worker
    // preempted runs at once, takes the signal and sleeps. Without the right
    // to (no CAP_SYS_NICE) it takes the signal at its next pick. Only a
    // real-time caller (the monitor's thread) raises: a normal one (the
    // leader's scan) sharing the cover's CPU would be preempted by the raised
    // cover before it sends the signal, and the cover would run its task at
    // SCHED_FIFO ahead of the woken worker until it blocked (seen in perf
    // traces: 1-2 ms each, about 2 % of a run's CPU time).
    bool raised = false;
    if ((::sched_getscheduler(0) & ~SCHED_RESET_ON_FORK) == SCHED_FIFO) {
        core::SchedAttr fifo;
        fifo.sched_policy = SCHED_FIFO;
        fifo.sched_priority = 1;
        fifo.sched_flags = core::kSchedFlagResetOnFork;
        raised = core::sched_setattr(tid, fifo) == 0;
    }
    core.suspend_requests.fetch_add(1, std::memory_order_relaxed);
    if (::syscall(SYS_tgkill, ::getpid(), tid, suspend_signal()) != 0) {
        (void)release_suspended(core);
        if (raised) {
            restore_policy(cover);  // no handler will run to do it
        }
    }
}

// Lock-free: ends the core's suspension request, or the suspension itself;
// the cover that had one, or null.
Worker* Runtime::Impl::release_suspended(Core& core) {
    Worker* cover = core.suspended.exchange(nullptr, std::memory_order_acq_rel);
    if (cover == nullptr) {
        return nullptr;
    }
    std::uint32_t word = cover->suspend_word.load(std::memory_order_acquire);
    while ((word & 1U) != 0 && !cover->suspend_word.compare_exchange_weak(word, word + 1, std::memory_order_acq_rel)) {
    }
    (void)futex(cover->suspend_word, FUTEX_WAKE_PRIVATE, 1, nullptr);
    return cover;
}

void Runtime::Impl::release_all_suspended() {
    for (auto& core : cores) {
        (void)release_suspended(*core);
    }
}

}  // namespace strata::runtime
