// SPDX-License-Identifier: MIT
// Small POSIX helpers the probes share: descriptors, scope guards, child
// processes with deadlines, unique names. Not part of strata's API.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::doctor {

/// Owns a file descriptor; closes it on destruction. Move-only.
class UniqueFd {
public:
    UniqueFd() = default;
    explicit UniqueFd(int fd) noexcept : fd_(fd) {}
    UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    UniqueFd& operator=(UniqueFd&& other) noexcept {
        reset(std::exchange(other.fd_, -1));
        return *this;
    }
    UniqueFd(const UniqueFd&) = delete;
    UniqueFd& operator=(const UniqueFd&) = delete;
    ~UniqueFd() { reset(); }

    [[nodiscard]] int get() const noexcept { return fd_; }
    [[nodiscard]] bool valid() const noexcept { return fd_ >= 0; }
    void reset(int fd = -1) noexcept;

private:
    int fd_ = -1;
};

/// Runs a callable when the scope ends, unless dismissed: the probes' cleanup
/// must happen on every early return.
template <class F>
class ScopeExit {
public:
    explicit ScopeExit(F f) : f_(std::move(f)) {}
    ScopeExit(const ScopeExit&) = delete;
    ScopeExit& operator=(const ScopeExit&) = delete;
    ~ScopeExit() {
        if (active_) f_();
    }
    void dismiss() noexcept { active_ = false; }

private:
    F f_;
    bool active_ = true;
};

/// "strata-doctor-<what>-<pid>-<n>-<random hex>": unique across processes
/// and across containers sharing /dev/shm or a cgroup hierarchy.
std::string unique_name(std::string_view what);

/// "1.5 GiB"
std::string human_bytes(std::uint64_t bytes);

/// "Operation not permitted (EPERM)"
std::string errno_text(int err);

/// The first line of `text`, with runs of blanks collapsed to one space.
std::string first_line(std::string_view text);

/// The absolute path of `program` found in $PATH, if executable there.
std::optional<std::string> find_in_path(std::string_view program);

struct CommandResult {
    int spawn_errno = 0;     ///< nonzero when the program could not be started
    bool timed_out = false;  ///< killed (with its process group) at the deadline
    int exit_code = -1;      ///< exit status, or -1 when killed by a signal
    std::string output;      ///< stdout and stderr, interleaved

    [[nodiscard]] bool succeeded() const noexcept { return spawn_errno == 0 && !timed_out && exit_code == 0; }
};

/// Runs argv (argv[0] looked up in $PATH) in its own process group with
/// stdin from /dev/null, collecting its output; kills the whole group at the
/// deadline so launchers such as mpiexec cannot leave ranks behind.
CommandResult run_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout);

/// Waits up to `timeout` for `pid` to exit; its wait status, or nullopt.
std::optional<int> wait_for_exit(pid_t pid, std::chrono::milliseconds timeout);

/// SIGKILLs `pid` and reaps it: the last resort that keeps probes from
/// leaving children behind.
void kill_and_reap(pid_t pid) noexcept;

/// Whether `path` is a mount point in this process's mount namespace.
bool is_mount_point(const std::string& path);

/// Decodes the octal escapes (\040 for space) of /proc/self/mountinfo fields.
std::string unescape_mount_field(std::string_view field);

}  // namespace strata::doctor
