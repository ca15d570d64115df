// SPDX-License-Identifier: MIT
// `strata container run [options] -- PROGRAM ARGS...`: PROGRAM in a real crun
// container (src/container/container.hpp) sharing this user's segment
// directory, with strata's own tree at /opt/strata; the bundle is removed when
// it ends. SIGINT and SIGTERM are passed on to the container.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "commands.hpp"
#include "container/container.hpp"
#include "strata/shm/segment.hpp"

namespace strata::cli {

namespace {

volatile std::sig_atomic_t g_signal = 0;

void remember(int sig) {
    g_signal = sig;
}

}  // namespace

int run_container(const ContainerOptions& options) {
    if (options.command.empty()) {
        fmt::print(stderr, "strata container run: give the program to run after --\n");
        return 2;
    }
    container::Spec spec;
    spec.args = options.command;
    spec.rootfs = options.rootfs;
    std::error_code ec;
    // bin/strata -> the tree it belongs to (an install prefix or a build tree).
    spec.strata_root = options.strata_root.empty()
                           ? std::filesystem::canonical("/proc/self/exe", ec).parent_path().parent_path()
                           : std::filesystem::path(options.strata_root);
    if (options.segment_dir.empty() && std::getenv("STRATA_SHM_DIR") == nullptr) {
        if (auto made = private_segment_dir(); !made) {
            fmt::print(stderr, "strata container run: {}\n", made.error().what());
            return 1;
        }
    }
    spec.segment_dir = options.segment_dir.empty() ? default_segment_dir() : std::filesystem::path(options.segment_dir);
    if (!options.cwd.empty()) {
        spec.cwd = options.cwd;
    }
    spec.env = options.env;
    auto bundle = container::Bundle::create(spec);
    if (!bundle) {
        fmt::print(stderr, "strata container run: {}\n", bundle.error().what());
        return bundle.error().code == Errc::invalid_argument ? 2 : 1;
    }
    struct sigaction action {};
    action.sa_handler = remember;
    ::sigaction(SIGINT, &action, nullptr);
    ::sigaction(SIGTERM, &action, nullptr);
    const auto argv = bundle->run_argv();
    const pid_t child = ::fork();
    if (child < 0) {
        fmt::print(stderr, "strata container run: fork: {}\n", describe_errno(errno));
        return 1;
    }
    if (child == 0) {
        ::signal(SIGINT, SIG_DFL);
        ::signal(SIGTERM, SIG_DFL);
        std::vector<char*> args;
        args.reserve(argv.size() + 1);
        for (const auto& a : argv) {
            args.push_back(const_cast<char*>(a.c_str()));
        }
        args.push_back(nullptr);
        ::execv(args[0], args.data());
        std::fprintf(stderr, "strata container run: cannot run %s\n", args[0]);
        ::_exit(127);
    }
    int status = 0;
    bool forwarded = false;
    while (::waitpid(child, &status, 0) < 0) {
        if (errno != EINTR) {
            break;
        }
        if (g_signal != 0 && !forwarded) {
            forwarded = true;
            (void)bundle->kill(g_signal);
        }
    }
    if (WIFEXITED(status)) {
        return WEXITSTATUS(status);
    }
    return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

}  // namespace strata::cli
