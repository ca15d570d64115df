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
// Needs tracefs (the tracepoint's id) and perf_event_open for tracepoints
// (root, CAP_PERFMON, or kernel.perf_event_paranoid <= -1). Used by the
// handoff tests and bench/shm_handoff to count the system calls per handoff.
#pragma once

#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <utility>

namespace strata::test {

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
        std::uint64_t id = 0;
        for (const char* root : {"/sys/kernel/tracing/events/", "/sys/kernel/debug/tracing/events/"}) {
            std::ifstream in(std::string(root) + tracepoint + "/id");
            if (in >> id) {
                break;
            }
        }
        if (id == 0) {
            *why = "no id for tracepoint " + tracepoint + " under /sys/kernel/tracing/events (tracefs not mounted?)";
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

private:
    explicit SyscallCounter(int fd) : fd_(fd) {}
    int fd_ = -1;
};

}  // namespace strata::test
