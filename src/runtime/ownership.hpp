// SPDX-License-Identifier: MIT
// Whether this job owns the CPUs it runs on (ownership.cpp): the fact that
// lets CoverPriority::automatic keep a standby worker per core, which spins
// at SCHED_IDLE and would take SCHED_IDLE time from another job's covers on
// a core it shares.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace strata::runtime::detail {

/// What the kernel says about the calling thread's CPUs.
struct CpuFacts {
    std::vector<int> allowed;       ///< sched_getaffinity, ascending
    std::vector<int> online;        ///< /sys/devices/system/cpu/online, ascending (empty: unknown)
    std::string cpuset;             ///< the thread's cpuset cgroup path ("/" the root, empty: unknown)
    bool cpuset_exclusive = false;  ///< v1 cpuset.cpu_exclusive is 1, or v2 cpuset.cpus.partition is root/isolated
};

/// Reads CpuFacts of the calling thread; unreadable parts stay empty (no error:
/// a fact that cannot be read only means ownership is not shown).
CpuFacts read_cpu_facts();

/// Why the job owns its CPUs, or nothing when it does not show it: a cpuset
/// cgroup other than the root that is exclusive (a batch system's job
/// cpuset, a v2 partition), or an affinity mask narrower than the online
/// CPUs (a launcher bound the job to its cores).
std::optional<std::string> owned_cores(const CpuFacts& facts);

}  // namespace strata::runtime::detail
