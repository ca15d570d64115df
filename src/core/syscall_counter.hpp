// SPDX-License-Identifier: MIT
// Counts the system calls of the calling thread, without ptrace or seccomp:
// a perf counter on the tracepoint raw_syscalls:sys_enter (or on one
// syscall's tracepoint, e.g. "syscalls/sys_enter_futex"), for this thread only.
//
//   std::string why;
//   auto counter = SyscallCounter::open("raw_syscalls/sys_enter", &why);  // nullopt + why if unavailable
//   const auto before = counter->read();
//   work();
//   const auto calls = counter->read() - before - 1;  // a read() is itself one system call
//
// Needs the tracepoint's id, which only tracefs shows: read from
// /sys/kernel/tracing (or debugfs's tracing/) when mounted, otherwise, as root,
// from a tracefs mounted for the moment in a child's private mount namespace —
// so a machine where nothing mounted tracefs counts too, and no mount is left
// anywhere. Then perf_event_open for tracepoints (root, CAP_PERFMON, or
// kernel.perf_event_paranoid <= -1). Used by the handoff tests and
// bench/shm_handoff to count the system calls per handoff.
#pragma once

#include <fcntl.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <utility>

namespace strata::core {

class SyscallCounter {
public:
    SyscallCounter(SyscallCounter&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    SyscallCounter& operator=(SyscallCounter&& other) noexcept {
        if (this != &other) {
            if (fd_ >= 0) {
                ::close(fd_);
            }
            fd_ = std::exchange(other.fd_, -1);
        }
        return *this;
    }
    SyscallCounter(const SyscallCounter&) = delete;
    SyscallCounter& operator=(const SyscallCounter&) = delete;
    ~SyscallCounter() {
        if (fd_ >= 0) {
            ::close(fd_);
        }
    }

    /// A counter of `tracepoint` ("group/name") for the calling thread; nullopt
    /// with the reason in *why when the kernel does not offer it here.
    static std::optional<SyscallCounter> open(const std::string& tracepoint, std::string* why) {
        const std::uint64_t id = tracepoint_id(tracepoint, why);
        if (id == 0) {
            return std::nullopt;
        }
        perf_event_attr attr{};
        attr.type = PERF_TYPE_TRACEPOINT;
        attr.size = sizeof attr;
        attr.config = id;
        const long fd = ::syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
        if (fd < 0) {
            *why = std::string("perf_event_open(tracepoint ") + tracepoint + "): " + std::strerror(errno) +
                   " (needs root, CAP_PERFMON or kernel.perf_event_paranoid <= -1)";
            return std::nullopt;
        }
        return SyscallCounter(static_cast<int>(fd));
    }

    /// Calls counted so far, including this read() itself.
    [[nodiscard]] std::uint64_t read() const {
        std::uint64_t value = 0;
        if (::read(fd_, &value, sizeof value) != static_cast<ssize_t>(sizeof value)) {
            return 0;
        }
        return value;
    }

    /// The id of `tracepoint` ("group/name"): from a mounted tracefs, else from
    /// one mounted in a private mount namespace; 0 with the reason in *why.
    static std::uint64_t tracepoint_id(const std::string& tracepoint, std::string* why) {
        for (const char* root : {"/sys/kernel/tracing/events/", "/sys/kernel/debug/tracing/events/"}) {
            std::ifstream in(std::string(root) + tracepoint + "/id");
            std::uint64_t id = 0;
            if (in >> id) {
                return id;
            }
        }
        return tracepoint_id_from_private_tracefs(tracepoint, why);
    }

private:
    explicit SyscallCounter(int fd) : fd_(fd) {}

    // A child leaves the caller's mount namespace, mounts tracefs where it
    // belongs, reads the id and exits: the mount dies with the namespace. The
    // child makes only system calls, so forking a threaded process is safe.
    static std::uint64_t tracepoint_id_from_private_tracefs(const std::string& tracepoint, std::string* why) {
        const std::string path = "/sys/kernel/tracing/events/" + tracepoint + "/id";
        int fds[2];
        if (::pipe2(fds, O_CLOEXEC) != 0) {
            *why = std::string("pipe2: ") + std::strerror(errno);
            return 0;
        }
        const pid_t child = ::fork();
        if (child == 0) {
            ::close(fds[0]);
            char buf[32] = {};
            // 1: unshare, 2: mount, 3: open the id file; the code is the errno's carrier.
            int stage = 1;
            if (::unshare(CLONE_NEWNS) == 0 && ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 &&
                (stage = 2, ::mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, nullptr) == 0)) {
                stage = 3;
                const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
                const ssize_t n = fd >= 0 ? ::read(fd, buf, sizeof buf - 1) : -1;
                if (n > 0 && ::write(fds[1], buf, static_cast<std::size_t>(n)) == n) {
                    ::_exit(0);
                }
            }
            const int codes[2] = {stage, errno};
            (void)!::write(fds[1], codes, sizeof codes);
            ::_exit(1);
        }
        ::close(fds[1]);
        if (child < 0) {
            ::close(fds[0]);
            *why = std::string("fork: ") + std::strerror(errno);
            return 0;
        }
        char buf[32] = {};
        const ssize_t n = ::read(fds[0], buf, sizeof buf - 1);
        ::close(fds[0]);
        int status = 0;
        ::waitpid(child, &status, 0);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && n > 0) {
            return std::strtoull(buf, nullptr, 10);
        }
        int codes[2] = {0, 0};
        if (n == static_cast<ssize_t>(sizeof codes)) {
            std::memcpy(codes, buf, sizeof codes);
        }
        static const char* const kStages[] = {"?", "unshare(CLONE_NEWNS)", "mount -t tracefs", "open"};
        *why = "no id for tracepoint " + tracepoint + ": tracefs is not mounted, and mounting it in a private mount " +
               "namespace failed at " + kStages[codes[0] >= 1 && codes[0] <= 3 ? codes[0] : 0] + " (" +
               std::strerror(codes[1]) + "; needs root)";
        return 0;
    }

    int fd_ = -1;
};

}  // namespace strata::core
