// SPDX-License-Identifier: MIT
// cma (cross-memory attach): process_vm_readv of a live child's memory.
//
// The child fills a buffer *after* fork with a pattern derived from its own
// pid, so the parent's copy of the buffer stays zero and a match can only
// come from the child's address space.
#include <fcntl.h>
#include <poll.h>
#include <sys/uio.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "probe.hpp"
#include "system.hpp"

namespace strata::doctor {

namespace {

using namespace std::chrono_literals;

constexpr std::size_t kBufferSize = 64 * 1024;

unsigned char pattern_byte(std::size_t index, pid_t pid) {
    return static_cast<unsigned char>((index * 31U + static_cast<std::size_t>(pid)) & 0xffU);
}

// Child: fill, report ready, block until the parent closes the release pipe.
// Only memory writes and read/write: safe after fork in a threaded parent.
[[noreturn]] void hold_buffer(std::vector<unsigned char>& buffer, int ready_fd, int release_fd) {
    const pid_t self = ::getpid();
    for (std::size_t i = 0; i < buffer.size(); ++i) buffer[i] = pattern_byte(i, self);
    const char ready = 'r';
    if (::write(ready_fd, &ready, 1) != 1) ::_exit(1);
    char ignored = 0;
    while (::read(release_fd, &ignored, 1) < 0 && errno == EINTR) {
    }
    ::_exit(0);
}

}  // namespace

Capability probe_cma() {
    Capability cap("cma", false);
    std::vector<unsigned char> buffer(kBufferSize, 0);

    std::array<int, 2> ready{};
    std::array<int, 2> release{};
    if (::pipe2(ready.data(), O_CLOEXEC) != 0 || ::pipe2(release.data(), O_CLOEXEC) != 0) {
        cap.detail = "pipe: " + errno_text(errno);
        return cap;
    }
    UniqueFd ready_read(ready[0]), ready_write(ready[1]);
    UniqueFd release_read(release[0]), release_write(release[1]);

    const pid_t child = ::fork();
    if (child < 0) {
        cap.detail = "fork: " + errno_text(errno);
        return cap;
    }
    if (child == 0) hold_buffer(buffer, ready_write.get(), release_read.get());
    ready_write.reset();
    release_read.reset();
    // Closing the release pipe lets the child exit; then reap it.
    ScopeExit reap([&release_write, child] {
        release_write.reset();
        if (!wait_for_exit(child, 2s)) kill_and_reap(child);
    });

    pollfd pfd{ready_read.get(), POLLIN, 0};
    char byte = 0;
    if (::poll(&pfd, 1, 5000) <= 0 || ::read(ready_read.get(), &byte, 1) != 1) {
        cap.detail = "the child holding the buffer did not start within 5 s";
        return cap;
    }

    std::vector<unsigned char> copy(kBufferSize, 0);
    iovec local{copy.data(), copy.size()};
    iovec remote{buffer.data(), buffer.size()};
    const ssize_t n = ::process_vm_readv(child, &local, 1, &remote, 1, 0);
    if (n < 0) {
        const int err = errno;
        cap.detail = "process_vm_readv: " + errno_text(err);
        cap.fix = err == ENOSYS ? "a kernel built with CONFIG_CROSS_MEMORY_ATTACH=y"
                                : "grant CAP_SYS_PTRACE, or sysctl kernel.yama.ptrace_scope=0 "
                                  "(containers: --cap-add SYS_PTRACE)";
        return cap;
    }
    if (static_cast<std::size_t>(n) != kBufferSize) {
        cap.detail = fmt::format("process_vm_readv read {} of {} bytes", n, kBufferSize);
        return cap;
    }
    for (std::size_t i = 0; i < kBufferSize; ++i) {
        if (copy[i] != pattern_byte(i, child)) {
            cap.detail = fmt::format("process_vm_readv returned wrong data at offset {}", i);
            return cap;
        }
    }
    cap.status = Status::ok;
    cap.detail = fmt::format("process_vm_readv of {} from a child process", human_bytes(kBufferSize));
    return cap;
}

}  // namespace strata::doctor
