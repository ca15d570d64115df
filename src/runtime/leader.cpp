// SPDX-License-Identifier: MIT
// The leader: an unbound thread that wakes idle workers for cores the
// monitor reports without a ready worker, and rescans every core each period
// to catch reports lost to the monitor's races (seed 002, §III-D).
#include <pthread.h>

#include <chrono>

#include "core/log.hpp"
#include "scheduler.hpp"

namespace strata::runtime {

void Runtime::Impl::notify_leader() {
    {
        std::lock_guard lock(leader_mutex);
        leader_flag = true;
    }
    leader_cv.notify_one();
}

// Every core as the scan would leave it: its ready workers are its active
// ones (none blocked in a task, none parking), no cover at SCHED_IDLE, no
// surrendered task waiting and no wake-up in flight. Then a lost report is
// impossible until some worker blocks, and that block is an event.
bool Runtime::Impl::cores_settled() {
    for (auto& core : cores) {
        if (monitor->ready(core->cpu) != core->active.load(std::memory_order_acquire) ||
            core->idle_covers.load(std::memory_order_acquire) !=
                (core->standby.load(std::memory_order_acquire) != nullptr ? 1 : 0) ||
            core->parked_in_task.load(std::memory_order_acquire) != 0 ||
            core->wake_in_flight.load(std::memory_order_acquire) ||
            core->needs_attention.load(std::memory_order_acquire)) {
            return false;
        }
    }
    return true;
}

// With a monitor the leader scans every core each leader_period, as the
// paper's leader does, but only while the scan has something to catch: after
// kDozeAfter scans that found every core settled it dozes, waiting
// kDozePeriods periods or until the monitor's callback (Runtime::start) sees
// an event and wakes it. Compute-only work is then not preempted by the
// leader a thousand times a second.
void Runtime::Impl::leader_main() {
    constexpr int kDozeAfter = 10;
    constexpr int kDozePeriods = 50;
    (void)::pthread_setname_np(::pthread_self(), "strata-leader");
    int settled_scans = 0;
    while (!stopping.load(std::memory_order_acquire)) {
        {
            std::unique_lock lock(leader_mutex);
            if (monitored) {
                const bool doze = empty_cores_reported && settled_scans >= kDozeAfter;
                leader_dozing.store(doze, std::memory_order_seq_cst);
                const auto period = doze ? options.leader_period * kDozePeriods : options.leader_period;
                leader_cv.wait_for(lock, period, [&] { return leader_flag; });
                leader_dozing.store(false, std::memory_order_relaxed);
            } else {
                leader_cv.wait(lock, [&] { return leader_flag; });
            }
            leader_flag = false;
        }
        if (stopping.load(std::memory_order_acquire)) {
            break;
        }
        for (auto& core : cores) {
            // Without a monitor only explicit reports (tests, fakes) count.
            const bool reported = core->needs_attention.exchange(false, std::memory_order_acq_rel);
            if (reported || monitored) {
                core->scans.fetch_add(1, std::memory_order_relaxed);
                attend(*core, true);
            }
        }
        settled_scans = monitored && cores_settled() ? settled_scans + 1 : 0;
    }
}

// The core has no ready worker: if there is work, give it one. Or it has one
// ready worker again (notify_when_one_ready, the leader's scan): a cover left
// alone at SCHED_IDLE gets the normal policy back. Or a covered worker woke
// (notify_when_woken): its cover surrenders the core.
void Runtime::Impl::attend(detail::Core& core, bool scan) {
    // idle+suspend: no ready worker while a cover is suspended (the woken
    // worker blocked again, parked or exited): the cover continues, and is
    // armed again for the next wakeup of the worker it covers for. The
    // release is lock-free: a suspended cover holds no runtime lock, but this
    // thread must not wait for anything the cover might hold.
    if (cover_suspend && monitored && core.suspended.load(std::memory_order_acquire) != nullptr &&
        monitor->ready(core.cpu) <= 0) {
        if (detail::Worker* cover = release_suspended(core); cover != nullptr) {
            std::unique_lock lock(core.mutex, std::try_to_lock);
            if (lock.owns_lock() && !cover->parked && core.active.load(std::memory_order_acquire) > 1) {
                core.cover = cover;
                (void)monitor->notify_when_woken(core.cpu);
            }
            return;
        }
    }
    if (cover_surrender && monitored && monitor->ready(core.cpu) > core.base) {
        std::lock_guard lock(core.mutex);
        surrender_cover(core);
    }
    if (core.idle_covers.load(std::memory_order_acquire) > 0 && monitored && monitor->ready(core.cpu) <= core.base) {
        std::lock_guard lock(core.mutex);
        settle_core(core);
    }
    const bool work =
        queued.load(std::memory_order_acquire) > 0 || core.parked_in_task.load(std::memory_order_acquire) > 0;
    if (!work || (monitored && monitor->ready(core.cpu) > 0)) {
        return;
    }
    // idle+standby: the core's standby worker takes a queued task itself. The
    // leader's scan still acts: a standby worker that did not (its CPU taken
    // by another process's thread, which SCHED_IDLE yields to) has had a period.
    if (!scan && core.standby.load(std::memory_order_acquire) != nullptr &&
        queued.load(std::memory_order_acquire) > 0) {
        return;
    }
    // The leader and the monitor's thread may both attend: one wake per core until the woken worker runs.
    bool idle = false;
    if (!core.wake_in_flight.compare_exchange_strong(idle, true, std::memory_order_acq_rel)) {
        return;
    }
    if (unpark_one(core, true)) {
        core.wakes.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    if (auto worker = add_worker(core, true); worker) {
        core.wakes.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    core.wake_in_flight.store(false, std::memory_order_release);
}

}  // namespace strata::runtime
