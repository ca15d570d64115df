// SPDX-License-Identifier: MIT
// Removal of everything the benchmark creates, also on SIGINT, SIGTERM, SIGHUP
// and SIGBUS: files and shared segments are registered *before* they are
// created, and the signal handler unlinks them with async-signal-safe calls
// only (unlink, rmdir), then re-raises the signal with its default action.
#pragma once

#include <filesystem>
#include <string>

#include "strata/error.hpp"

namespace strata::bench {

class Cleanup {
public:
    /// Installs the signal handlers. One instance per process.
    Cleanup();
    /// Removes every registered file and segment and the work directory.
    ~Cleanup();
    Cleanup(const Cleanup&) = delete;
    Cleanup& operator=(const Cleanup&) = delete;

    /// Creates a fresh directory inside `parent` (mkdtemp) and registers it.
    Result<std::filesystem::path> make_work_dir(const std::filesystem::path& parent);
    /// Registers a file to remove; returns the path for convenience.
    std::filesystem::path file(const std::filesystem::path& path);
    /// Registers a shared segment name (removed as /dev/shm/<name>).
    std::string segment(const std::string& name);
    /// Removes all registered objects now (idempotent).
    void remove_all() noexcept;
};

}  // namespace strata::bench
