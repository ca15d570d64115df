// SPDX-License-Identifier: MIT
// Starting external programs (launch.hpp).
#include "launch.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

#include <fmt/format.h>

extern char** environ;

namespace strata::external {

namespace {

// RAII for the posix_spawn objects.
struct SpawnObjects {
    posix_spawn_file_actions_t actions{};
    posix_spawnattr_t attr{};
    SpawnObjects() {
        ::posix_spawn_file_actions_init(&actions);
        ::posix_spawnattr_init(&attr);
    }
    ~SpawnObjects() {
        ::posix_spawn_file_actions_destroy(&actions);
        ::posix_spawnattr_destroy(&attr);
    }
    SpawnObjects(const SpawnObjects&) = delete;
    SpawnObjects& operator=(const SpawnObjects&) = delete;
};

std::vector<std::string> environment(const std::vector<std::pair<std::string, std::string>>& extra) {
    std::vector<std::string> out;
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
        const std::string_view entry(*e);
        const std::string_view name = entry.substr(0, entry.find('='));
        bool replaced = false;
        for (const auto& [k, v] : extra) {
            replaced = replaced || k == name;
        }
        if (!replaced) {
            out.emplace_back(entry);
        }
    }
    for (const auto& [k, v] : extra) {
        out.push_back(fmt::format("{}={}", k, v));
    }
    return out;
}

}  // namespace

Result<int> open_pidfd(pid_t pid) {
    const long fd = ::syscall(SYS_pidfd_open, pid, 0);
    if (fd < 0) {
        return make_sys_error(errno, "pidfd_open(pid={})", pid);
    }
    return static_cast<int>(fd);
}

Result<Child> spawn(const SpawnRequest& request) {
    if (request.argv.empty()) {
        return make_error(Errc::invalid_argument, "spawn: argv is empty");
    }
    SpawnObjects o;
    int rc = ::posix_spawnattr_setpgroup(&o.attr, 0);
    sigset_t none;
    sigset_t all;
    sigemptyset(&none);
    sigfillset(&all);
    rc = rc != 0 ? rc : ::posix_spawnattr_setsigmask(&o.attr, &none);
    rc = rc != 0 ? rc : ::posix_spawnattr_setsigdefault(&o.attr, &all);
    rc = rc != 0
             ? rc
             : ::posix_spawnattr_setflags(
                   &o.attr, static_cast<short>(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF));
    rc = rc != 0 ? rc : ::posix_spawn_file_actions_addopen(&o.actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    if (rc == 0 && request.stdout_fd >= 0) {
        rc = ::posix_spawn_file_actions_adddup2(&o.actions, request.stdout_fd, STDOUT_FILENO);
    }
    if (rc == 0 && request.stderr_fd >= 0) {
        rc = ::posix_spawn_file_actions_adddup2(&o.actions, request.stderr_fd, STDERR_FILENO);
    }
    // dup2 onto the same number clears FD_CLOEXEC in the child only (glibc >= 2.29).
    for (int fd : request.inherit) {
        if (rc == 0) {
            rc = ::posix_spawn_file_actions_adddup2(&o.actions, fd, fd);
        }
    }
    if (rc == 0 && !request.cwd.empty()) {
        rc = ::posix_spawn_file_actions_addchdir_np(&o.actions, request.cwd.c_str());
    }
    if (rc != 0) {
        return make_sys_error(rc, "spawn {}: preparing posix_spawn", request.argv.front());
    }

    std::vector<char*> argv;
    argv.reserve(request.argv.size() + 1);
    for (const std::string& a : request.argv) {
        argv.push_back(const_cast<char*>(a.c_str()));
    }
    argv.push_back(nullptr);
    std::vector<std::string> env = environment(request.env);
    std::vector<char*> envp;
    envp.reserve(env.size() + 1);
    for (std::string& e : env) {
        envp.push_back(e.data());
    }
    envp.push_back(nullptr);

    pid_t pid = -1;
    rc = ::posix_spawnp(&pid, argv[0], &o.actions, &o.attr, argv.data(), envp.data());
    if (rc != 0) {
        return make_sys_error(rc, "spawn {}{}", request.argv.front(),
                              request.cwd.empty() ? std::string() : " in cwd=" + request.cwd);
    }
    auto pidfd = open_pidfd(pid);
    if (!pidfd) {
        ::kill(-pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
        return std::unexpected(pidfd.error());
    }
    return Child{pid, *pidfd};
}

}  // namespace strata::external
