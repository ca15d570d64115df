// SPDX-License-Identifier: MIT
// Worker threads: binding, the main loop, scheduling points, the idle pool.
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>
#include <algorithm>
#include <string>

#include "core/cpu_relax.hpp"
#include "core/log.hpp"
#include "cpuset.hpp"
#include "io_priority.hpp"
#include "scheduler.hpp"

namespace strata::runtime {

namespace detail {
Worker*& current_worker() noexcept;
}

using detail::Core;
using detail::Worker;

// `cover`: created for a core whose active workers are all blocked (attend()).
Result<Worker*> Runtime::Impl::add_worker(Core& core, bool cover) {
    std::unique_lock core_lock(core.mutex);
    if (core.workers >= core.base - 1 + options.max_workers_per_core) {
        return make_error(Errc::busy, "Runtime: cpu={}: already {} workers ({} side by side + max_workers_per_core)",
                          core.cpu, core.workers, core.base - 1);
    }
    std::lock_guard lock(workers_mutex);
    if (stopping.load(std::memory_order_acquire)) {
        // stop() collects the workers to join under workers_mutex after setting stopping.
        return make_error(Errc::busy, "Runtime: cpu={}: the runtime is stopping", core.cpu);
    }
    auto worker = std::make_unique<Worker>();
    worker->rt = this;
    worker->core = &core;
    worker->slot = slot_count.load(std::memory_order_relaxed);
    Worker* raw = worker.get();
    const bool covering = cover && core.active.load(std::memory_order_acquire) > 0;
    core.members.push_back(raw);
    core.active.fetch_add(1, std::memory_order_acq_rel);
    ++core.workers;
    if (covering) {
        cover_core(core, *raw);
    }
    try {
        raw->thread = std::thread([this, raw] { worker_main(*raw); });
    } catch (const std::system_error& e) {
        core.active.fetch_sub(1, std::memory_order_acq_rel);
        core.members.pop_back();
        --core.workers;
        return make_error(Errc::out_of_memory, "Runtime: cpu={}: cannot create a worker thread: {}", core.cpu,
                          e.what());
    }
    slots[static_cast<std::size_t>(raw->slot)].store(raw, std::memory_order_release);
    slot_count.store(raw->slot + 1, std::memory_order_release);
    workers.push_back(std::move(worker));
    return raw;
}

void Runtime::Impl::worker_main(Worker& self) {
    detail::current_worker() = &self;
    self.tid.store(static_cast<pid_t>(::gettid()), std::memory_order_release);
    // Named for perf, top -H and gdb: "strata-w<cpu>".
    const std::string name = fmt::format("strata-w{}", self.core->cpu);
    (void)::pthread_setname_np(::pthread_self(), name.c_str());
    if (int err = bind_this_thread({self.core->cpu}); err != 0) {
        strata::detail::log().warn("strata runtime: cannot bind a worker to cpu {}: {}", self.core->cpu,
                                   describe_errno(err));
    }
    // An explicit I/O class: a cover at SCHED_IDLE would otherwise do its I/O in the idle class.
    if (int err = detail::set_thread_io_priority(io_priority); err != 0) {
        strata::detail::log().warn("strata runtime: cannot set a worker's I/O priority: {}", describe_errno(err));
    }
    if (monitored) {
        if (auto registered = monitor->register_worker(self.tid.load(), self.core->cpu); !registered) {
            strata::detail::log().warn("strata runtime: {}", registered.error().what());
        }
    }
    start_cover(self);  // created to cover for a blocked worker
    self.core->wake_in_flight.store(false, std::memory_order_release);

    int idle_rounds = 0;
    while (!stopping.load(std::memory_order_acquire)) {
        scheduling_point(self);
        if (Task* task = find_task(self); task != nullptr) {
            idle_rounds = 0;
            execute(self, task);
            continue;
        }
        // Out of work: a cover it suspended (suspend.cpp) may hold what it waits for.
        if (cover_suspend && self.core->suspended.load(std::memory_order_acquire) != nullptr) {
            (void)release_suspended(*self.core);
        }
        // Not at SCHED_IDLE (a cover): the poller's lock would wait on a thread the kernel runs rarely.
        if (IdlePoller* poller = idle_poller.load(std::memory_order_acquire);
            poller != nullptr && !self.idle_priority.load(std::memory_order_relaxed)) {
            self.polling = true;
            const bool polled = poller->poll();
            self.polling = false;
            if (polled) {
                idle_rounds = 0;
                continue;
            }
            if (poller->expecting()) {
                idle_rounds = 0;
                std::this_thread::yield();
                continue;
            }
        }
        // Spin a little before parking: a task spawned a moment later is
        // taken without a futex wake-up.
        if (++idle_rounds < 64) {
            std::this_thread::yield();
            continue;
        }
        idle_rounds = 0;
        park(self, false);
    }

    if (monitored) {
        monitor->unregister_worker(self.tid.load());
    }
    rusage usage{};
    if (::getrusage(RUSAGE_THREAD, &usage) == 0) {
        self.core->context_switches.fetch_add(static_cast<std::uint64_t>(usage.ru_nvcsw + usage.ru_nivcsw),
                                              std::memory_order_relaxed);
    }
    detail::current_worker() = nullptr;
}

// At a scheduling point a worker of a core with more ready workers than the
// core keeps side by side (core.base, usually one) surrenders the core: it
// parks until the core needs it again. The runtime's own active count must
// agree, so a stale monitor reading never leaves a core with fewer active
// workers than that.
void Runtime::Impl::scheduling_point(Worker& self) {
    if (!monitored || self.polling || stopping.load(std::memory_order_relaxed)) {
        return;
    }
    Core& core = *self.core;
    // Normally the worker that leaves restores its cover; this catches the rest.
    if (self.idle_priority.load(std::memory_order_relaxed) &&
        (core.active.load(std::memory_order_acquire) <= core.base || !cover_idle.load(std::memory_order_relaxed))) {
        check_cover(self);
    }
    // idle+suspend: a cover suspended for this worker's wakeup has done its
    // part once this worker reaches a scheduling point (the end of the task
    // it woke in, or the yield() after its I/O): the core is handed back, the
    // cover continues its task and this worker surrenders below, as with
    // idle. The cover's task is held only while the woken worker runs task
    // code, not until it blocks again.
    if (cover_suspend) {
        if (Worker* suspended = core.suspended.load(std::memory_order_acquire);
            suspended != nullptr && suspended != &self) {
            if (release_suspended(core) != nullptr) {
                core.suspend_handbacks.fetch_add(1, std::memory_order_relaxed);
            }
        }
    }
    // Again after waking: a worker woken to cover for a short block finds the
    // blocked worker back already, and leaves again rather than resume its
    // task beside it.
    while (monitor->ready(core.cpu) > core.base && core.active.load(std::memory_order_acquire) > core.base &&
           !stopping.load(std::memory_order_relaxed)) {
        if (!park(self, true)) {
            break;
        }
    }
    // Back from its block between tasks while its cover is blocked in a task
    // of its own: this worker covers now (take_cover_role).
    if (exact_counts && core.base == 1 && self.task_depth == 0 && !self.idle_priority.load(std::memory_order_relaxed) &&
        cover_idle.load(std::memory_order_relaxed) && core.active.load(std::memory_order_acquire) > core.base &&
        monitor->ready(core.cpu) <= core.base) {
        take_cover_role(self);
    }
}

// Parks `self` in its core's idle pool until unpark_one() or stop() wakes it;
// false when it did not park after all.
bool Runtime::Impl::park(Worker& self, bool surrender) {
    Core& core = *self.core;
    const bool in_task = self.task_depth > 0;
    // idle+standby: a worker between tasks stands by instead, if its core has
    // none yet and another active worker that may block.
    if (cover_standby && !in_task && stand_by(self, surrender)) {
        return true;
    }
    {
        std::lock_guard lock(core.mutex);
        // Two workers surrendering at once must not leave the core with fewer active than its base.
        if (surrender && core.active.load(std::memory_order_acquire) <= core.base) {
            return false;
        }
        if (core.suspended.load(std::memory_order_acquire) == &self) {
            (void)release_suspended(core);  // a late request to suspend a worker that leaves
        }
        core.idle.push_back(&self);
        self.parked = true;
        self.parked_in_task = in_task;
        core.active.fetch_sub(1, std::memory_order_acq_rel);
        if (in_task) {
            core.parked_in_task.fetch_add(1, std::memory_order_acq_rel);
        }
        sleepers.fetch_add(1, std::memory_order_seq_cst);
        // Checked after announcing the sleep: a spawner that pushed before
        // sees sleepers > 0 and wakes someone, or we see its task here.
        const bool work_left = !surrender && queued.load(std::memory_order_seq_cst) > 0;
        if (work_left || stopping.load(std::memory_order_seq_cst)) {
            core.idle.erase(std::find(core.idle.begin(), core.idle.end(), &self));
            self.parked = false;
            self.parked_in_task = false;
            core.active.fetch_add(1, std::memory_order_acq_rel);
            if (in_task) {
                core.parked_in_task.fetch_sub(1, std::memory_order_acq_rel);
            }
            sleepers.fetch_sub(1, std::memory_order_seq_cst);
            return false;
        }
        if (surrender) {
            core.surrenders.fetch_add(1, std::memory_order_relaxed);
        }
        // The worker left behind alone gets the normal policy back as soon as
        // this one sleeps, not at its own next scheduling point.
        leave_core(core);
    }
    // A worker that leaves its core idle hands the core to one that holds an
    // unfinished task, so surrendered tasks always make progress. With a
    // monitor that reports empty cores, the monitor's thread does it once this
    // worker sleeps (attend()): woken from here, the other worker would
    // preempt this one before it sleeps, and the core would hold two ready
    // workers for up to a time slice.
    if (!surrender && !empty_cores_reported && core.active.load(std::memory_order_acquire) == 0 &&
        core.parked_in_task.load(std::memory_order_acquire) > 0) {
        unpark_one(core);
    }
    std::unique_lock lock(self.wake_mutex);
    self.wake_cv.wait(lock, [&] { return self.wake_flag; });
    self.wake_flag = false;
    lock.unlock();
    start_cover(self);  // woken to cover for a blocked worker
    core.wake_in_flight.store(false, std::memory_order_release);
    return true;
}

// idle+standby (include/strata/runtime.hpp): instead of parking, `self` stays
// runnable at SCHED_IDLE, out of the monitor's count, spinning on it. When
// the core's last ready worker blocks, the kernel has nothing else to run
// there and switches to `self` at once (the BPF program sends no event while
// a standby worker is set); `self` sees the count at zero and, if a task is
// queued, takes over as the blocked worker's cover: SCHED_IDLE already, so
// the blocked worker preempts it the moment it wakes. With no queued task
// but a surrendered one, it wakes the worker that holds it (attend). It
// stops standing by, and parks normally, when its core has no active worker
// left (nothing there can block), or when the runtime stops. True when it
// took over (or the runtime stops); false: park as usual.
bool Runtime::Impl::stand_by(Worker& self, bool surrender) {
    Core& core = *self.core;
    const pid_t tid = self.tid.load(std::memory_order_acquire);
    {
        std::lock_guard lock(core.mutex);
        if (core.standby.load(std::memory_order_acquire) != nullptr ||
            core.active.load(std::memory_order_acquire) <= 1 || stopping.load(std::memory_order_acquire) ||
            !cover_idle.load(std::memory_order_acquire)) {
            return false;
        }
        set_priority(self, true);
        if (!self.idle_priority.load(std::memory_order_acquire) || !monitor->set_standby(core.cpu, tid)) {
            set_priority(self, false);
            return false;
        }
        core.standby.store(&self, std::memory_order_release);
        self.parked = true;  // not active: cover_core and settle_core leave it alone
        core.active.fetch_sub(1, std::memory_order_acq_rel);
        if (surrender) {
            core.surrenders.fetch_add(1, std::memory_order_relaxed);
        }
        // The worker left alone gets the normal policy back now: this one is
        // at SCHED_IDLE already, so it cannot keep that one from running.
        settle_core(core);
    }
    bool take_over = false;
    while (!stopping.load(std::memory_order_acquire)) {
        if (monitor->ready(core.cpu) <= 0) {
            if (queued.load(std::memory_order_acquire) > 0) {
                take_over = true;
                break;
            }
            if (core.parked_in_task.load(std::memory_order_acquire) > 0) {
                attend(core);
            }
            strata::core::cpu_relax();
        } else {
            // Run while a ready worker waits: beside a cover, SCHED_IDLE as
            // well, it would get half the core. A yield pushes its deadline
            // far back, so the kernel picks it next only when nothing else
            // of the core's is runnable.
            sched_yield();
        }
        if (core.active.load(std::memory_order_acquire) <= 0) {
            break;
        }
    }
    {
        std::lock_guard lock(core.mutex);
        (void)monitor->set_standby(core.cpu, 0);
        core.standby.store(nullptr, std::memory_order_release);
        self.parked = false;
        core.active.fetch_add(1, std::memory_order_acq_rel);
        if (take_over) {
            core.standby_takeovers.fetch_add(1, std::memory_order_relaxed);
            cover_core(core, self);  // its blocked workers back to normal; it stays at SCHED_IDLE
        } else {
            set_priority(self, false);
        }
    }
    if (take_over) {
        start_cover(self);
    }
    return take_over || stopping.load(std::memory_order_acquire);
}

// Wakes one parked worker of `core`, preferring one that holds an unfinished
// task; false when the pool is empty. `cover`: woken because every active
// worker of the core is blocked (attend()), so it covers for them.
bool Runtime::Impl::unpark_one(Core& core, bool cover) {
    Worker* chosen = nullptr;
    {
        std::lock_guard lock(core.mutex);
        if (core.idle.empty()) {
            return false;
        }
        auto it = std::find_if(core.idle.begin(), core.idle.end(), [](Worker* w) { return w->parked_in_task; });
        if (it == core.idle.end()) {
            it = core.idle.end() - 1;
        }
        chosen = *it;
        const bool covering = cover && core.active.load(std::memory_order_acquire) > 0;
        core.idle.erase(it);
        chosen->parked = false;
        if (chosen->parked_in_task) {
            chosen->parked_in_task = false;
            core.parked_in_task.fetch_sub(1, std::memory_order_acq_rel);
        }
        core.active.fetch_add(1, std::memory_order_acq_rel);
        sleepers.fetch_sub(1, std::memory_order_seq_cst);
        if (covering) {
            cover_core(core, *chosen);
        } else {
            set_priority(*chosen, false);
        }
    }
    wake(*chosen);
    return true;
}

void Runtime::Impl::wake(Worker& worker) {
    {
        std::lock_guard lock(worker.wake_mutex);
        worker.wake_flag = true;
    }
    worker.wake_cv.notify_one();
}

}  // namespace strata::runtime
