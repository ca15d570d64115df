// SPDX-License-Identifier: MIT
// Helpers of the container tests: whether real containers can run here, and a
// container started in the background with its output in a file.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "container/container.hpp"
#include "integration/shm_process.hpp"
#include "support/capability.hpp"

namespace strata::test {

/// Empty when crun, root and the image are there; else what is missing and how to get it.
inline std::string containers_missing() {
    if (!is_root()) {
        return "root (crun runs strata's containers as root)";
    }
    if (auto runtime = container::find_runtime(); !runtime) {
        return runtime.error().what();
    }
    if (auto rootfs = container::default_rootfs(); !rootfs) {
        return rootfs.error().what();
    }
    return {};
}

#define STRATA_REQUIRE_CONTAINERS()                                                            \
    do {                                                                                       \
        const std::string missing_ = ::strata::test::containers_missing();                     \
        STRATA_REQUIRE(missing_.empty(), "real containers (crun and the image): " + missing_); \
    } while (false)

inline std::string read_text(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

/// Waits until `path` contains `needle`, or `pid` ended; true when it appeared.
/// The bound only stops a hang: a loaded machine may be slow, never wrong.
inline bool wait_for_text(const std::filesystem::path& path, const std::string& needle, pid_t pid,
                          std::chrono::seconds bound = std::chrono::seconds(120)) {
    const auto deadline = std::chrono::steady_clock::now() + bound;
    while (std::chrono::steady_clock::now() < deadline) {
        if (read_text(path).find(needle) != std::string::npos) {
            return true;
        }
        if (::waitpid(pid, nullptr, WNOHANG) != 0) {
            return read_text(path).find(needle) != std::string::npos;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
}

/// `crun run` of `bundle` in a child of the test, stdout and stderr into `out`.
inline pid_t start_container(const container::Bundle& bundle, const std::filesystem::path& out) {
    const auto argv = bundle.run_argv();
    return spawn([&argv, &out]() -> int {
        const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0 || ::dup2(fd, STDOUT_FILENO) < 0 || ::dup2(fd, STDERR_FILENO) < 0) {
            return 120;
        }
        std::vector<char*> args;
        for (const auto& a : argv) {
            args.push_back(const_cast<char*>(a.c_str()));
        }
        args.push_back(nullptr);
        ::execv(args[0], args.data());
        return 127;
    });
}

/// The build tree holding bin/ and lib/, bound at /opt/strata.
inline std::filesystem::path strata_build_root() {
    return std::filesystem::canonical("/proc/self/exe").parent_path().parent_path();
}

}  // namespace strata::test
