// SPDX-License-Identifier: MIT
// Capability checks for tests that need privileges or kernel features.
//
// STRATA_REQUIRE(condition, "what is missing") skips the test when the
// condition is false. With CI=true in the environment it fails instead: CI is
// set up to offer every capability, so a missing one there is a broken CI
// machine, and a silent skip would hide untested code.
//
// Use it at the top of a test body or in SetUp() (it returns from the
// enclosing void function, like every fatal gtest assertion).
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include <sys/mount.h>
#include <unistd.h>

#include <gtest/gtest.h>

#define STRATA_REQUIRE(condition, what)                                                                     \
    do {                                                                                                    \
        if (!(condition)) {                                                                                 \
            if (::strata::test::in_ci()) {                                                                  \
                FAIL() << "missing capability (a failure in CI): " << (what) << ::strata::test::kSetupHint; \
            } else {                                                                                        \
                GTEST_SKIP() << "missing capability: " << (what);                                           \
            }                                                                                               \
        }                                                                                                   \
    } while (false)

namespace strata::test {

/// Where a CI failure for a missing capability points the reader.
inline constexpr const char* kSetupHint =
    " (as root, scripts/kernel-setup sets up what a script can; strata doctor names the rest)";

/// True when the environment says this is a CI run (CI=true, as CI services set it).
inline bool in_ci() {
    const char* value = std::getenv("CI");
    if (value == nullptr) {
        return false;
    }
    const std::string_view text(value);
    return text == "true" || text == "TRUE" || text == "True" || text == "1";
}

inline bool is_root() {
    return ::geteuid() == 0;
}

/// The full path of an executable found in PATH or in the sbin directories
/// (which a non-login root shell may lack); empty when there is none.
inline std::filesystem::path find_program(std::string_view name) {
    std::string search = "/usr/local/sbin:/usr/sbin:/sbin";
    if (const char* path = std::getenv("PATH"); path != nullptr) {
        search = std::string(path) + ":" + search;
    }
    std::size_t begin = 0;
    while (begin <= search.size()) {
        const std::size_t end = std::min(search.find(':', begin), search.size());
        const std::filesystem::path candidate = std::filesystem::path(search.substr(begin, end - begin)) / name;
        if (end > begin && ::access(candidate.c_str(), X_OK) == 0) {
            return candidate;
        }
        begin = end + 1;
    }
    return {};
}

/// Root, /dev/loop-control and the losetup program.
inline bool has_loop_devices() {
    return is_root() && ::access("/dev/loop-control", R_OK | W_OK) == 0 && !find_program("losetup").empty();
}

/// The cgroup v1 memory controller mounted at /sys/fs/cgroup/memory, writable.
inline bool has_cgroup_v1_memory() {
    return is_root() && ::access("/sys/fs/cgroup/memory/cgroup.procs", W_OK) == 0 &&
           ::access("/sys/fs/cgroup/memory/memory.limit_in_bytes", R_OK) == 0;
}

/// Whether this process may mount a tmpfs: tried once on a fresh directory.
inline bool can_mount_tmpfs() {
    static const bool able = [] {
        if (!is_root()) {
            return false;
        }
        std::string dir = (std::filesystem::temp_directory_path() / "strata-mount-probe-XXXXXX").string();
        if (::mkdtemp(dir.data()) == nullptr) {
            return false;
        }
        const bool mounted = ::mount("tmpfs", dir.c_str(), "tmpfs", 0, "size=64k") == 0;
        if (mounted) {
            ::umount2(dir.c_str(), MNT_DETACH);
        }
        ::rmdir(dir.c_str());
        return mounted;
    }();
    return able;
}

}  // namespace strata::test
