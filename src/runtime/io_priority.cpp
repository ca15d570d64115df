// SPDX-License-Identifier: MIT
#include "io_priority.hpp"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace strata::runtime::detail {
namespace {

constexpr int kWhoProcess = 1;  // IOPRIO_WHO_PROCESS: with id 0, the calling thread
constexpr int kNormalLevel = 4;

}  // namespace

int thread_io_priority() noexcept {
    return static_cast<int>(::syscall(SYS_ioprio_get, kWhoProcess, 0));
}

int worker_io_priority() noexcept {
    const int own = thread_io_priority();
    if (own >= 0 && io_priority_class(own) != kIoClassNone) {
        return own;
    }
    errno = 0;
    const int nice = ::getpriority(PRIO_PROCESS, 0);
    const int level = errno != 0 ? kNormalLevel : std::clamp((nice + 20) / 5, 0, kIoLevels - 1);
    return io_priority_value(kIoClassBestEffort, level);
}

int set_thread_io_priority(int ioprio) noexcept {
    return ::syscall(SYS_ioprio_set, kWhoProcess, 0, ioprio) == 0 ? 0 : errno;
}

}  // namespace strata::runtime::detail
