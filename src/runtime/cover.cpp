// SPDX-License-Identifier: MIT
// Cover priority (include/strata/runtime.hpp, docs/runtime.md): a worker
// woken to cover for a blocked worker of its core runs at SCHED_IDLE, so the
// kernel preempts it the moment the blocked worker wakes ("idle tasks are by
// definition preempted by non-idle tasks"); the woken worker then reaches its
// scheduling point at once and surrenders, and the cover gets the normal
// policy back as soon as it is its core's only active worker.
//
// Invariant, kept under core.mutex wherever the set of active workers
// changes: while a core has more active workers than it keeps side by side
// (core.base, one unless Options::workers exceeds the CPUs), the one that was
// woken last to cover (or took the cover role, take_cover_role) is SCHED_IDLE
// and the others (blocked, or woken from their block) are normal; with at
// most core.base active, all are normal.
// The cover lowers itself when it starts running, so the monitor's thread
// that woke it makes no extra system call.
//
// Surrender (CoverPriority::surrender, idle_surrender): SCHED_IDLE alone did
// not make the kernel preempt the cover on every wakeup — a wakeup from
// another CPU often waited for the cover CPU's next tick (1–4 ms at HZ=250).
// So the runtime arms the monitor's wakeup event while a worker covers; on
// it, the monitor's thread sets the cover to SCHED_IDLE at nice 19. A lower
// priority of a running thread makes the kernel reschedule its CPU at once
// (prio_changed_fair → resched_curr, an IPI when remote), and the woken
// worker, normal, is picked. The cover's nice goes back with its policy.
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <thread>
#include <utility>

#include "core/log.hpp"
#include "core/sched_attr.hpp"
#include "cover.hpp"
#include "scheduler.hpp"

namespace strata::runtime {

using detail::Core;
using detail::Worker;

std::string_view to_string(CoverPriority priority) noexcept {
    switch (priority) {
        case CoverPriority::automatic: return "auto";
        case CoverPriority::idle: return "idle";
        case CoverPriority::normal: return "normal";
        case CoverPriority::surrender: return "surrender";
        case CoverPriority::idle_surrender: return "idle+surrender";
        case CoverPriority::idle_suspend: return "idle+suspend";
        case CoverPriority::idle_standby: return "idle+standby";
    }
    return "?";
}

Result<CoverPriority> parse_cover_priority(std::string_view text, std::string_view param) {
    for (auto priority :
         {CoverPriority::automatic, CoverPriority::idle, CoverPriority::normal, CoverPriority::surrender,
          CoverPriority::idle_surrender, CoverPriority::idle_suspend, CoverPriority::idle_standby}) {
        if (text == to_string(priority)) {
            return priority;
        }
    }
    return make_error(
        Errc::invalid_argument,
        "{}={}: not a cover priority; expected auto, idle, normal, surrender, idle+surrender, idle+suspend or "
        "idle+standby",
        param, text);
}

namespace detail {

int base_nice() noexcept {
    static const int nice = [] {
        errno = 0;
        const int value = ::getpriority(PRIO_PROCESS, 0);
        return errno == 0 ? value : 0;
    }();
    return nice;
}

int set_policy(pid_t tid, bool idle, int nice) noexcept {
    core::SchedAttr attr;
    attr.sched_policy = idle ? SCHED_IDLE : SCHED_OTHER;
    attr.sched_flags = core::kSchedFlagResetOnFork;
    attr.sched_nice = nice;
    return core::sched_setattr(tid, attr);
}

}  // namespace detail

namespace {

// `nice19`: the surrender request, whose priority change reschedules the
// thread's CPU.
int set_cover_policy(pid_t tid, bool idle, bool nice19 = false) {
    return detail::set_policy(tid, idle, nice19 ? 19 : detail::base_nice());
}

}  // namespace

namespace detail {

namespace {

// Whether this process may take a thread back from SCHED_IDLE (the kernel
// asks for CAP_SYS_NICE or an RLIMIT_NICE that allows nice 0): tried on a
// thread of its own, which says it more surely than reading capabilities.
Result<void> probe_restore() {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NICE, &limit) == 0 && limit.rlim_cur < 20 && limit.rlim_max >= 20) {
        limit.rlim_cur = 20;  // allowed to raise the soft limit up to the hard one
        (void)::setrlimit(RLIMIT_NICE, &limit);
    }
    int lower = 0;
    int restore = 0;
    std::thread probe([&] {
        lower = set_cover_policy(0, true, true) == 0 ? 0 : errno;
        if (lower == 0) {
            restore = set_cover_policy(0, false) == 0 ? 0 : errno;
        }
    });
    probe.join();
    if (lower != 0) {
        return make_error(Errc::permission_denied, "cannot set a thread to SCHED_IDLE: {}", describe_errno(lower));
    }
    if (restore != 0) {
        return make_error(Errc::permission_denied,
                          "cannot take a thread back from SCHED_IDLE to normal: {}; grant CAP_SYS_NICE or raise "
                          "RLIMIT_NICE to 20 (ulimit -e 20)",
                          describe_errno(restore));
    }
    return {};
}

}  // namespace

CoverPriority CoverChoice::priority() const noexcept {
    if (suspend) {
        return CoverPriority::idle_suspend;
    }
    if (standby) {
        return CoverPriority::idle_standby;
    }
    if (surrender) {
        return idle ? CoverPriority::idle_surrender : CoverPriority::surrender;
    }
    return idle ? CoverPriority::idle : CoverPriority::normal;
}

Result<CoverChoice> choose_cover_priority(CoverPriority requested, bool monitored, bool wakeups_reported,
                                          const std::optional<std::string>& owned_cores) {
    const auto name = to_string(requested);
    if (requested == CoverPriority::normal) {
        return CoverChoice{false, false, "normal by request"};
    }
    if (!monitored) {
        return CoverChoice{false, false,
                           fmt::format("{}: normal, because without a monitor no worker covers for another", name)};
    }
    const bool surrender = requested == CoverPriority::surrender || requested == CoverPriority::idle_surrender ||
                           requested == CoverPriority::idle_suspend;
    if ((surrender || requested == CoverPriority::idle_standby) && !wakeups_reported) {
        return make_error(Errc::unsupported,
                          "STRATA_COVER_PRIORITY={}: the monitor does not report wakeups (only STRATA_MONITOR=ebpf "
                          "does); use idle",
                          name);
    }
    if (auto probe = probe_restore(); !probe) {
        if (requested != CoverPriority::automatic) {
            return make_error(Errc::permission_denied, "STRATA_COVER_PRIORITY={}: {}", name, probe.error().what());
        }
        return CoverChoice{false, false, fmt::format("auto: normal, because the runtime {}", probe.error().what())};
    }
    if (requested == CoverPriority::automatic && wakeups_reported && owned_cores) {
        CoverChoice choice{true, false,
                           fmt::format("auto: idle+standby, because {}: SCHED_IDLE while covering; one worker per "
                                       "core stands by at SCHED_IDLE and takes over when the core's last ready "
                                       "worker blocks",
                                       *owned_cores)};
        choice.standby = true;
        return choice;
    }
    switch (requested) {
        case CoverPriority::surrender:
            return CoverChoice{false, true,
                               "surrender: normal while covering, SCHED_IDLE at nice 19 (the CPU rescheduled) when the "
                               "monitor sees the covered worker wake"};
        case CoverPriority::idle_surrender:
            return CoverChoice{true, true,
                               "idle+surrender: SCHED_IDLE while covering, nice 19 (the CPU rescheduled) when the "
                               "monitor sees the covered worker wake"};
        case CoverPriority::idle_suspend:
            return CoverChoice{true, true,
                               "idle+suspend: SCHED_IDLE while covering; suspended mid-task by a signal when the "
                               "monitor sees the covered worker wake, until that worker blocks again",
                               true};
        case CoverPriority::idle_standby: {
            CoverChoice choice{true, false,
                               "idle+standby: SCHED_IDLE while covering; one worker per core stands by at SCHED_IDLE, "
                               "spinning, and takes over when the core's last ready worker blocks"};
            choice.standby = true;
            return choice;
        }
        case CoverPriority::automatic:
            return CoverChoice{true, false,
                               fmt::format("auto: idle (SCHED_IDLE while covering for a blocked worker); no standby "
                                           "worker, because {}",
                                           wakeups_reported ? "the job does not show that it owns its cores (an "
                                                              "exclusive cpuset, or an affinity narrower than the "
                                                              "online CPUs)"
                                                            : "the monitor does not report wakeups")};
        default:
            return CoverChoice{true, false,
                               fmt::format("{}: idle (SCHED_IDLE while covering for a blocked worker)", name)};
    }
}

}  // namespace detail

// With core.mutex held. `kick`: the surrender request (nice 19 as well),
// made also when the worker is at SCHED_IDLE already.
void Runtime::Impl::set_priority(Worker& worker, bool idle, bool kick) {
    const bool was_idle = worker.idle_priority.load(std::memory_order_relaxed);
    if (was_idle == idle && worker.kicked == kick) {
        return;
    }
    if (idle && !cover_idle.load(std::memory_order_acquire)) {
        return;
    }
    const pid_t tid = worker.tid.load(std::memory_order_acquire);
    if (set_cover_policy(tid, idle, kick) != 0) {
        const int err = errno;
        if (err == ESRCH) {
            return;  // the thread is exiting
        }
        // Stop lowering anyone; a worker left at SCHED_IDLE is restored at its next scheduling point.
        if (cover_idle.exchange(false)) {
            strata::detail::log().warn("strata runtime: cover priority off: cannot set thread {} to {}: {}", tid,
                                       idle ? "SCHED_IDLE" : "normal", describe_errno(err));
        }
        return;
    }
    worker.kicked = kick;
    if (kick) {
        worker.core->kicks.fetch_add(1, std::memory_order_relaxed);
    }
    if (was_idle == idle) {
        return;
    }
    worker.idle_priority.store(idle, std::memory_order_release);
    worker.core->idle_covers.fetch_add(idle ? 1 : -1, std::memory_order_acq_rel);
    (idle ? worker.core->covers : worker.core->restores).fetch_add(1, std::memory_order_relaxed);
}

// `cover` was chosen to run for the core's blocked workers (it is parked or
// not started yet): every other active worker — blocked, so not running —
// goes back to normal, so that whichever wakes first preempts the cover, and
// the cover lowers itself once it runs (start_cover).
void Runtime::Impl::cover_core(Core& core, Worker& cover) {
    for (Worker* worker : core.members) {
        if (worker != &cover && !worker->parked) {
            set_priority(*worker, false);
        }
    }
    core.cover = nullptr;
    cover.cover_pending = cover_idle.load(std::memory_order_acquire);
}

// Run by a worker woken (or created) to cover, before it takes a task: it
// goes to SCHED_IDLE only if the worker it covers for is still blocked. If
// that one woke meanwhile (a short block: a lock, a page fault), the cover
// stays normal and surrenders at its next scheduling point, at once, instead
// of waiting at SCHED_IDLE for the other's next one.
void Runtime::Impl::start_cover(Worker& self) {
    Core& core = *self.core;
    std::lock_guard lock(core.mutex);
    if (!std::exchange(self.cover_pending, false)) {
        return;
    }
    if (core.active.load(std::memory_order_acquire) > core.base && monitor->ready(core.cpu) <= 1) {
        // A surrender-mode cover may still be low from its last surrender.
        set_priority(self, cover_at_start);
        if (cover_surrender) {
            // A wakeup between the check above and the arming is caught at
            // this worker's scheduling point, which comes next.
            core.cover = &self;
            (void)monitor->notify_when_woken(core.cpu);
        }
    }
}

// At a scheduling point between tasks, a normal worker of a core that has
// more active workers than it keeps side by side, and no other ready one:
// another worker is blocked in its task — in the I/O workloads the cover that
// was woken for this one, now blocked itself (a short write, a lock). Left as
// it was, this worker would run its next task at the normal policy, and the
// cover, SCHED_IDLE when it wakes, would wait behind it for that whole task
// (milliseconds counted as oversubscribed). So the roles swap: this worker
// covers (SCHED_IDLE), the blocked ones get the normal policy, and whichever
// wakes preempts this one and finishes its task first.
// Only where the counts are exact (the ebpf monitor: ready() follows every
// switch) and the core keeps one worker side by side. With proc's sampled
// counts a running worker can look blocked, and the swap then puts a worker
// at SCHED_IDLE beside it for nothing; with several normal workers per core
// a swapped worker at SCHED_IDLE held queued tasks while the others spun
// (7 workers on 2 CPUs under load, ocr.conform.seven_workers_with_monitor_proc_*:
// an EDT never started in 8 of 120 runs). scheduling_point() checks all of
// this before taking core.mutex; the counts are checked again under it.
void Runtime::Impl::take_cover_role(Worker& self) {
    Core& core = *self.core;
    {
        std::lock_guard lock(core.mutex);
        if (core.active.load(std::memory_order_acquire) <= core.base || monitor->ready(core.cpu) > core.base) {
            return;
        }
        cover_core(core, self);
        core.cover_swaps.fetch_add(1, std::memory_order_relaxed);
    }
    start_cover(self);
}

// The monitor's wakeup event (or the leader's scan): the core has more than
// one ready worker while one covers at full weight. The cover gives it up
// now: SCHED_IDLE at nice 19 makes the kernel reschedule its CPU, and it
// gets the normal policy back once alone (leave_core, settle_core).
void Runtime::Impl::surrender_cover(Core& core) {
    Worker* cover = std::exchange(core.cover, nullptr);
    if (cover == nullptr || cover->parked || core.active.load(std::memory_order_acquire) <= core.base) {
        return;
    }
    if (cover_suspend) {
        suspend_cover(core, *cover);
        return;
    }
    set_priority(*cover, true, true);
}

// The active set shrank: a core left with its base count of active workers
// (or fewer, but some) gives them the normal policy.
void Runtime::Impl::settle_core(Core& core) {
    const int active = core.active.load(std::memory_order_acquire);
    if (active < 1 || active > core.base) {
        return;
    }
    core.cover = nullptr;
    (void)release_suspended(core);  // alone on its core: a late request is void
    for (Worker* worker : core.members) {
        if (!worker->parked) {
            set_priority(*worker, false);
        }
    }
}

// A worker parks and leaves one active worker, maybe a cover at SCHED_IDLE.
// Restoring the cover now would let it preempt the leaving worker before that
// one sleeps, and the core would stay oversubscribed for a time slice; so the
// monitor is asked to call back once the leaving worker has blocked
// (attend() then restores), and only a monitor that cannot gets it done now.
void Runtime::Impl::leave_core(Core& core) {
    const int active = core.active.load(std::memory_order_acquire);
    if (active < 1 || active > core.base || core.idle_covers.load(std::memory_order_acquire) == 0) {
        return;
    }
    // The monitor's event is "down to one ready worker": it fits only a core
    // that keeps one.
    if (core.base > 1 || !monitor->notify_when_one_ready(core.cpu)) {
        settle_core(core);
    }
}

// At a scheduling point of a worker still at SCHED_IDLE: a missed restore
// (cover priority turned off, or a race) is made up here.
void Runtime::Impl::check_cover(Worker& self) {
    Core& core = *self.core;
    std::lock_guard lock(core.mutex);
    if (!cover_idle.load(std::memory_order_acquire)) {
        set_priority(self, false);
    } else {
        settle_core(core);
    }
}

}  // namespace strata::runtime
