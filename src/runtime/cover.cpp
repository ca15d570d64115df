// Cover priority (include/strata/runtime.hpp, docs/runtime.md): a worker
// woken to cover for a blocked worker of its core runs at SCHED_IDLE, so the
// kernel preempts it the moment the blocked worker wakes ("idle tasks are by
// definition preempted by non-idle tasks"); the woken worker then reaches its
// scheduling point at once and surrenders, and the cover gets the normal
// policy back as soon as it is its core's only active worker.
//
// Invariant, kept under core.mutex wherever the set of active workers
// changes: while a core has more than one active worker, the one that was
// woken last to cover is SCHED_IDLE and the others (blocked, or woken from
// their block) are normal; a core's only active worker is normal. The cover
// lowers itself when it starts running, so the monitor's thread that woke it
// makes no extra system call.
#include <sched.h>
#include <sys/resource.h>

#include <cerrno>
#include <thread>
#include <utility>

#include "core/log.hpp"
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
    }
    return "?";
}

Result<CoverPriority> parse_cover_priority(std::string_view text, std::string_view param) {
    if (text == "auto") return CoverPriority::automatic;
    if (text == "idle") return CoverPriority::idle;
    if (text == "normal") return CoverPriority::normal;
    return make_error(Errc::invalid_argument, "{}={}: expected auto, idle or normal", param, text);
}

namespace {

// SCHED_RESET_ON_FORK: a process forked by a covering worker (an external
// task) starts with the normal policy, not SCHED_IDLE.
int set_policy(pid_t tid, bool idle) {
    const sched_param param{};
    return ::sched_setscheduler(tid, (idle ? SCHED_IDLE : SCHED_OTHER) | SCHED_RESET_ON_FORK, &param);
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
        lower = set_policy(0, true) == 0 ? 0 : errno;
        if (lower == 0) {
            restore = set_policy(0, false) == 0 ? 0 : errno;
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

Result<CoverChoice> choose_cover_priority(CoverPriority requested, bool monitored) {
    if (requested == CoverPriority::normal) {
        return CoverChoice{false, "normal by request"};
    }
    if (!monitored) {
        return CoverChoice{false, fmt::format("{}: normal, because without a monitor no worker covers for another",
                                              to_string(requested))};
    }
    if (auto probe = probe_restore(); !probe) {
        if (requested == CoverPriority::idle) {
            return make_error(Errc::permission_denied, "STRATA_COVER_PRIORITY=idle: {}", probe.error().what());
        }
        return CoverChoice{false, fmt::format("auto: normal, because the runtime {}", probe.error().what())};
    }
    return CoverChoice{true,
                       fmt::format("{}: idle (SCHED_IDLE while covering for a blocked worker)", to_string(requested))};
}

}  // namespace detail

// With core.mutex held.
void Runtime::Impl::set_priority(Worker& worker, bool idle) {
    if (worker.idle_priority.load(std::memory_order_relaxed) == idle) {
        return;
    }
    if (idle && !cover_idle.load(std::memory_order_acquire)) {
        return;
    }
    const pid_t tid = worker.tid.load(std::memory_order_acquire);
    if (set_policy(tid, idle) != 0) {
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
    if (core.active.load(std::memory_order_acquire) > 1 && monitor->ready(core.cpu) <= 1) {
        set_priority(self, true);
    }
}

// The active set shrank: a core left with one active worker gives it the normal policy.
void Runtime::Impl::settle_core(Core& core) {
    if (core.active.load(std::memory_order_acquire) != 1) {
        return;
    }
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
    if (core.active.load(std::memory_order_acquire) != 1 || core.idle_covers.load(std::memory_order_acquire) == 0) {
        return;
    }
    if (!monitor->notify_when_one_ready(core.cpu)) {
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
