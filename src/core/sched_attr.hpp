// SPDX-License-Identifier: MIT
// sched_setattr(2) and its struct sched_attr (SCHED_ATTR_SIZE_VER0): glibc
// before 2.41 declares neither, and linux/sched/types.h clashes with <sched.h>.
// Used by the runtime's cover priority (src/runtime/cover.cpp) and by the UMT
// benchmark's per-thread slice (bench/umt).
#pragma once

#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdint>

namespace strata::core {

struct SchedAttr {
    std::uint32_t size = sizeof(SchedAttr);
    std::uint32_t sched_policy = 0;
    std::uint64_t sched_flags = 0;
    std::int32_t sched_nice = 0;
    std::uint32_t sched_priority = 0;
    std::uint64_t sched_runtime = 0;
    std::uint64_t sched_deadline = 0;
    std::uint64_t sched_period = 0;
};

inline constexpr std::uint64_t kSchedFlagResetOnFork = 0x01;  // SCHED_FLAG_RESET_ON_FORK

/// sched_setattr(tid, attr, 0): 0, or -1 with errno set. tid 0 is the calling thread.
inline int sched_setattr(pid_t tid, const SchedAttr& attr) {
    return static_cast<int>(::syscall(SYS_sched_setattr, tid, &attr, 0U));
}

}  // namespace strata::core
