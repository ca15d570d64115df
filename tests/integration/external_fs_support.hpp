// SPDX-License-Identifier: MIT
// Helpers of the strata-fsd integration tests: blocks in memfds or private
// memory, task processes that are forked or exec'd and told when to go on.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "external/fsd/mounts.hpp"
#include "external/fuse_exposure.hpp"
#include "support/capability.hpp"
#include "support/resources.hpp"

namespace strata::test {

using external::BlockView;
using external::FuseExposure;
using external::FuseOptions;
using external::TaskFiles;

/// A block whose bytes are pattern `seed`, in a memfd mapped here (shared
/// channel) and also usable as private memory (vm channel via its address).
struct MemfdBlock {
    int fd = -1;
    void* data = nullptr;
    std::size_t size = 0;
    MemfdBlock(std::size_t bytes, unsigned seed) : size(bytes) {
        fd = ::memfd_create("strata-test-block", MFD_CLOEXEC);
        EXPECT_EQ(::ftruncate(fd, static_cast<off_t>(size)), 0);
        data = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        fill_pattern({static_cast<std::byte*>(data), size}, seed);
    }
    ~MemfdBlock() {
        ::munmap(data, size);
        ::close(fd);
    }
    MemfdBlock(const MemfdBlock&) = delete;
    MemfdBlock& operator=(const MemfdBlock&) = delete;
    [[nodiscard]] BlockView view(std::uint64_t id, bool with_fd = true) const {
        return BlockView{.id = id, .data = data, .size = size, .fd = with_fd ? fd : -1, .fd_offset = 0};
    }
};

/// A forked task process: it waits for go(), runs `body` and exits with its result.
class ForkedTask {
public:
    template <class Body>
    explicit ForkedTask(Body&& body) {
        int fds[2];
        EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);
        std::fflush(nullptr);
        pid_ = ::fork();
        if (pid_ == 0) {
            ::prctl(PR_SET_PDEATHSIG, SIGKILL);
            ::close(fds[1]);
            char byte = 0;
            if (::read(fds[0], &byte, 1) != 1) {
                ::_exit(120);
            }
            ::_exit(body());
        }
        ::close(fds[0]);
        go_fd_ = fds[1];
    }
    ~ForkedTask() {
        if (go_fd_ >= 0) {
            ::close(go_fd_);
        }
        if (pid_ > 0 && !reaped_) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
    }
    ForkedTask(const ForkedTask&) = delete;
    ForkedTask& operator=(const ForkedTask&) = delete;
    [[nodiscard]] pid_t pid() const { return pid_; }
    void go() { EXPECT_EQ(::write(go_fd_, "g", 1), 1); }
    /// The exit code, or 128 + signal.
    int wait() {
        int status = 0;
        ::waitpid(pid_, &status, 0);
        reaped_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }

private:
    pid_t pid_ = -1;
    int go_fd_ = -1;
    bool reaped_ = false;
};

/// Runs `argv` (exec'd, not forked code) and returns its pid; its stdout and
/// stderr go to `out` (a file the caller reads after it exits).
inline pid_t spawn_program(const std::vector<std::string>& argv, const std::filesystem::path& out) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    std::vector<char*> args;
    for (const auto& a : argv) {
        args.push_back(const_cast<char*>(a.c_str()));
    }
    args.push_back(nullptr);
    pid_t pid = -1;
    EXPECT_EQ(::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ), 0) << argv[0];
    posix_spawn_file_actions_destroy(&actions);
    return pid;
}

inline int wait_exit_code(pid_t pid) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/// Reads the whole file at `path` with read(2); the errno of the first failure, or 0.
inline int read_whole(const std::string& path, std::vector<std::byte>& bytes) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return errno;
    }
    bytes.clear();
    std::vector<std::byte> chunk(1 << 20);
    for (;;) {
        const ssize_t n = ::read(fd, chunk.data(), chunk.size());
        if (n < 0) {
            const int err = errno;
            ::close(fd);
            return err;
        }
        if (n == 0) {
            break;
        }
        bytes.insert(bytes.end(), chunk.begin(), chunk.begin() + n);
    }
    ::close(fd);
    return 0;
}

inline FuseOptions fuse_options(FuseOptions::Channel channel, bool page_cache = true) {
    FuseOptions options;
    options.channel = channel;
    options.page_cache = page_cache;
    return options;
}

inline bool fuse_available() {
    return ::access("/dev/fuse", R_OK | W_OK) == 0;
}

/// Polls `condition` every 20 ms until it holds or `timeout` passes.
template <class Condition>
bool eventually(Condition&& condition, std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!condition()) {
        if (std::chrono::steady_clock::now() > deadline) {
            return false;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
}

inline bool is_mounted(const std::string& mount_point) {
    for (const auto& m : external::fsd::list_mounts()) {
        if (m.mount_point == mount_point) {
            return true;
        }
    }
    return false;
}

}  // namespace strata::test
