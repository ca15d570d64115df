// SPDX-License-Identifier: MIT
#include "system.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "strata/error.hpp"

extern char** environ;

namespace strata::doctor {

namespace {

using Clock = std::chrono::steady_clock;

int remaining_ms(Clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    return left.count() <= 0 ? 0 : static_cast<int>(left.count());
}

}  // namespace

void UniqueFd::reset(int fd) noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
}

std::string unique_name(std::string_view what) {
    static std::atomic<unsigned> counter{0};
    static const std::uint32_t salt = std::random_device{}();
    return fmt::format("strata-doctor-{}-{}-{}-{:08x}", what, ::getpid(), counter.fetch_add(1), salt);
}

std::string human_bytes(std::uint64_t bytes) {
    static constexpr std::array<const char*, 6> units{"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    auto value = static_cast<double>(bytes);
    std::size_t unit = 0;
    while (value >= 1024.0 && unit + 1 < units.size()) {
        value /= 1024.0;
        ++unit;
    }
    return unit == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", value, units[unit]);
}

std::string errno_text(int err) {
    return describe_errno(err);
}

std::string first_line(std::string_view text) {
    const auto end = text.find('\n');
    const auto line = text.substr(0, end);
    std::string out;
    bool blank = false;
    for (const char c : line) {
        if (c == ' ' || c == '\t' || c == '\r') {
            blank = !out.empty();
            continue;
        }
        if (blank) out += ' ';
        blank = false;
        out += c;
    }
    return out;
}

std::optional<std::string> find_in_path(std::string_view program) {
    const char* path = std::getenv("PATH");
    std::stringstream dirs(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
    for (std::string dir; std::getline(dirs, dir, ':');) {
        if (dir.empty()) dir.push_back('.');  // an empty entry means the current directory
        const auto candidate = std::filesystem::path(dir) / program;
        std::error_code ec;
        if (std::filesystem::is_regular_file(candidate, ec) && ::access(candidate.c_str(), X_OK) == 0)
            return candidate.string();
    }
    return std::nullopt;
}

CommandResult run_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
    CommandResult result;
    std::array<int, 2> fds{};
    if (::pipe2(fds.data(), O_CLOEXEC) != 0) {
        result.spawn_errno = errno;
        return result;
    }
    UniqueFd read_end(fds[0]);
    UniqueFd write_end(fds[1]);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, write_end.get(), STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, write_end.get(), STDERR_FILENO);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);

    std::vector<char*> args;
    args.reserve(argv.size() + 1);
    for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);

    pid_t pid = -1;
    const int rc = ::posix_spawnp(&pid, args[0], &actions, &attr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    write_end.reset();
    if (rc != 0) {
        result.spawn_errno = rc;
        return result;
    }

    // Read until the deadline; stop once the process has exited and its output
    // has gone quiet, even if a grandchild still holds the pipe open.
    const auto deadline = Clock::now() + timeout;
    std::optional<int> status;
    bool eof = false;
    for (;;) {
        if (!eof) {
            pollfd pfd{read_end.get(), POLLIN, 0};
            if (::poll(&pfd, 1, std::min(50, remaining_ms(deadline))) > 0) {
                std::array<char, 4096> buf{};
                const ssize_t n = ::read(read_end.get(), buf.data(), buf.size());
                if (n > 0) result.output.append(buf.data(), static_cast<std::size_t>(n));
                if (n == 0 || (n < 0 && errno != EINTR)) eof = true;
                continue;
            }
        }
        if (!status) {
            int wstatus = 0;
            if (::waitpid(pid, &wstatus, WNOHANG) == pid) status = wstatus;
        }
        if (status) break;
        if (remaining_ms(deadline) == 0) {
            result.timed_out = true;
            ::kill(-pid, SIGKILL);
            kill_and_reap(pid);
            break;
        }
        if (eof) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (status && WIFEXITED(*status) && !result.timed_out) result.exit_code = WEXITSTATUS(*status);
    return result;
}

std::optional<int> wait_for_exit(pid_t pid, std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
        int wstatus = 0;
        const pid_t r = ::waitpid(pid, &wstatus, WNOHANG);
        if (r == pid) return wstatus;
        if (r < 0 && errno != EINTR) return std::nullopt;
        if (Clock::now() >= deadline) return std::nullopt;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
}

void kill_and_reap(pid_t pid) noexcept {
    ::kill(pid, SIGKILL);
    int wstatus = 0;
    while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
}

std::string unescape_mount_field(std::string_view field) {
    std::string out;
    for (std::size_t i = 0; i < field.size(); ++i) {
        if (field[i] == '\\' && i + 3 < field.size() && field[i + 1] >= '0' && field[i + 1] <= '7') {
            const int value = (field[i + 1] - '0') * 64 + (field[i + 2] - '0') * 8 + (field[i + 3] - '0');
            out += static_cast<char>(value);
            i += 3;
        } else {
            out += field[i];
        }
    }
    return out;
}

bool is_mount_point(const std::string& path) {
    std::ifstream mountinfo("/proc/self/mountinfo");
    for (std::string line; std::getline(mountinfo, line);) {
        std::istringstream fields(line);
        std::string id, parent, dev, root, mount_point;
        fields >> id >> parent >> dev >> root >> mount_point;
        if (unescape_mount_field(mount_point) == path) return true;
    }
    return false;
}

}  // namespace strata::doctor
