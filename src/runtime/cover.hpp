// SPDX-License-Identifier: MIT
// Which kernel policy covering workers get (cover.cpp).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "strata/runtime.hpp"

namespace strata::runtime::detail {

struct CoverChoice {
    bool idle = false;       ///< covering workers run at SCHED_IDLE
    bool surrender = false;  ///< the monitor's wakeup event makes a cover give up its core
    std::string reason;      ///< one line: the request, the choice and why
    bool suspend = false;    ///< the cover is suspended mid-task by a signal instead (idle+suspend)
    bool standby = false;    ///< a worker that would park stands by at SCHED_IDLE (idle+standby)
    [[nodiscard]] CoverPriority priority() const noexcept;
};

/// Resolves `requested` for this process: idle and surrender need a monitor
/// (without one no worker covers) and the right to take a thread back from
/// SCHED_IDLE at nice 19, which is tried on a short-lived thread; surrender
/// (and idle+suspend, idle+standby) also need a monitor that reports wakeups
/// (`wakeups_reported`: the ebpf monitor, which also keeps standby workers). Errors:
/// permission_denied when idle, surrender or idle+surrender was requested
/// explicitly and that right is missing; unsupported when surrender was
/// requested and the monitor does not report wakeups. `owned_cores` (why
/// the job owns its CPUs, ownership.hpp) makes automatic choose idle+standby
/// when the monitor reports wakeups: a standby worker then spins only on
/// cores no other job runs on.
Result<CoverChoice> choose_cover_priority(CoverPriority requested, bool monitored, bool wakeups_reported,
                                          const std::optional<std::string>& owned_cores);

/// The process's nice value (the benchmark driver's --nice), read once: the
/// nice a worker returns to when it is not lowered.
int base_nice() noexcept;

/// Sets thread `tid` (0: the caller) to SCHED_IDLE or SCHED_OTHER at `nice`,
/// with SCHED_RESET_ON_FORK: a process forked by a covering worker (an
/// external task) starts with the normal policy. One raw system call
/// (async-signal-safe); 0 or -1 with errno.
int set_policy(pid_t tid, bool idle, int nice) noexcept;

}  // namespace strata::runtime::detail
