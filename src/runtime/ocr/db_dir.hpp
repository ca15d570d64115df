// SPDX-License-Identifier: MIT
// The private directory of one OCR run's storage data blocks (docs/runtime.md,
// "Data blocks on storage"): <base>/strata-ocr-<pid>-XXXXXX, made by mkdtemp
// (0700, owned by the user), locked with flock on the directory while the run
// lives, files created in it with O_CREAT | O_EXCL | O_NOFOLLOW. A run removes
// its directory at the end; the directory of a run that died is removed by
// the next run and by `strata shm gc` (collect_db_dirs in strata/runtime/ocr.hpp).
#pragma once

#include <filesystem>

#include "strata/error.hpp"

namespace strata::ocr {

class RunDbDir {
public:
    /// Collects the directories of dead runs in `base` (best effort, logged),
    /// then makes and locks this run's.
    static Result<RunDbDir> make(const std::filesystem::path& base);

    RunDbDir(RunDbDir&& other) noexcept;
    RunDbDir& operator=(RunDbDir&&) = delete;
    RunDbDir(const RunDbDir&) = delete;
    RunDbDir& operator=(const RunDbDir&) = delete;
    /// Removes the files still in the directory and the directory itself.
    ~RunDbDir();

    [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

private:
    RunDbDir(std::filesystem::path path, int fd) : path_(std::move(path)), fd_(fd) {}

    std::filesystem::path path_;
    int fd_ = -1;  // the directory, flock'ed: the run is alive while it is held
};

}  // namespace strata::ocr
