// SPDX-License-Identifier: MIT
// The keeper process (keeper.hpp).
#include "keeper.hpp"

#include "tree_kill.hpp"

#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>

namespace strata::external {

namespace {

constexpr int kPipeFd = 3;
constexpr int kRuntimeFd = 4;             // a pidfd of the runtime, or closed
constexpr std::size_t kMaxGroups = 4096;  // as many as the reactor's signal handler kills

// Waits (bounded) until the runtime has fully exited. Its exit reparents the
// programs and, for each group that becomes orphaned with a stopped member,
// sends SIGHUP: a program stopped by kill_trees before that would die of it
// and orphan its setsid children before the scan could find them. A runtime
// that only closed the socket (a normal end) is alive: go on after the bound.
void wait_for_runtime_exit() {
    pollfd exited{kRuntimeFd, POLLIN, 0};
    while (::poll(&exited, 1, 200) < 0 && errno == EINTR) {
    }
}

// The forked keeper: system calls only, on memory it owns after fork. Every
// record is 4 bytes and the buffer a multiple of 4, so no read splits one.
[[noreturn]] void keep(int read_fd, pid_t runtime) {
    sigset_t all;
    sigfillset(&all);
    ::sigprocmask(SIG_SETMASK, &all, nullptr);  // only SIGKILL or EOF ends it
    ::setsid();
    ::prctl(PR_SET_NAME, "strata-keeper", 0, 0, 0);
    // A pidfd of the runtime, unless it died already (then there is nothing to wait for).
    const long opened = ::syscall(SYS_pidfd_open, runtime, 0);
    const int runtime_fd =
        opened >= 0 && ::getppid() == runtime ? ::fcntl(static_cast<int>(opened), F_DUPFD_CLOEXEC, 10) : -1;
    if (read_fd != kPipeFd) {
        ::dup2(read_fd, kPipeFd);
    }
    if (runtime_fd >= 0) {
        ::dup2(runtime_fd, kRuntimeFd);
    }
    ::syscall(SYS_close_range, runtime_fd >= 0 ? kRuntimeFd + 1 : kPipeFd + 1, ~0U, 0);
    for (int fd = 0; fd < kPipeFd; ++fd) {
        ::close(fd);  // hold no terminal or pipe of the runtime's
    }

    static std::array<pid_t, kMaxGroups> groups{};
    std::array<std::int32_t, 256> records{};
    for (;;) {
        const ssize_t n = ::read(kPipeFd, records.data(), sizeof(records));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;  // EOF: the runtime is gone (or closed the pipe at its end)
        }
        for (std::size_t i = 0; i < static_cast<std::size_t>(n) / sizeof(std::int32_t); ++i) {
            const std::int32_t r = records[i];
            const pid_t find = r > 0 ? 0 : -r;  // add: an empty slot; remove: the group
            const pid_t put = r > 0 ? r : 0;
            for (auto& slot : groups) {
                if (slot == find) {
                    slot = put;
                    break;
                }
            }
        }
    }
    bool any = false;
    for (const pid_t group : groups) {
        any = any || group > 0;
    }
    if (any) {
        wait_for_runtime_exit();
    }
    kill_trees(groups.data(), groups.size());  // also the members that left a group (setsid)
    ::_exit(0);
}

}  // namespace

Result<std::unique_ptr<Keeper>> Keeper::start() {
    // A socket, not a pipe: send(MSG_NOSIGNAL) to a keeper killed by hand
    // must fail with EPIPE, not kill the runtime with SIGPIPE.
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
        return make_sys_error(errno, "external keeper: socketpair");
    }
    const pid_t runtime = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) {
        const int err = errno;
        ::close(fds[0]);
        ::close(fds[1]);
        return make_sys_error(err, "external keeper: fork");
    }
    if (pid == 0) {
        keep(fds[0], runtime);
    }
    ::close(fds[0]);
    return std::unique_ptr<Keeper>(new Keeper(pid, fds[1]));
}

Keeper::~Keeper() {
    ::close(write_fd_);  // EOF: the keeper kills what is left (nothing, normally) and exits
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
}

void Keeper::send(std::int32_t record) noexcept {
    while (::send(write_fd_, &record, sizeof(record), MSG_NOSIGNAL) < 0 && errno == EINTR) {
    }
}

void Keeper::add(pid_t group) noexcept {
    if (group > 0) {
        send(group);
    }
}

void Keeper::remove(pid_t group) noexcept {
    if (group > 0) {
        send(-group);
    }
}

}  // namespace strata::external
