// SPDX-License-Identifier: MIT
// Listing and garbage-collecting segments of a segment directory: what
// `strata shm ls` and `strata shm gc` print and do (docs/shm.md).
//
// A user is alive while it holds its byte of the segment's lock file, so a
// segment whose users all died (SIGKILL, OOM kill, node-local crash) is found
// without trusting pids, and in any pid namespace.
//
// Thread safety: both functions may run concurrently with any segment use.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "strata/error.hpp"

namespace strata {

/// One segment found in a segment directory.
struct SegmentInfo {
    std::string name;
    std::filesystem::path path;  ///< the .seg file
    std::uint64_t size = 0;      ///< bytes
    unsigned users_alive = 0;    ///< users holding their lock byte now
    double age_seconds = 0;      ///< since creation
    bool complete = true;        ///< false: its creator died while creating it
    std::string broken_reason;   ///< empty unless a user died holding a segment lock
};

/// The segments of `dir` (empty: default_segment_dir()), sorted by name.
Result<std::vector<SegmentInfo>> list_segments(const std::filesystem::path& dir = {});

/// Removes the segments of `dir` whose users are all dead (or that have no
/// user), never one in use; returns the names removed. With a `name_prefix`,
/// only segments whose name starts with it (the segments of one job or one
/// process, e.g. a distributed OCR program's data blocks), and also their
/// lock files without a segment file that nobody holds (a creator killed
/// between creating the two): the caller knows that no process creates
/// segments of that prefix any more (the lock file exists alone for a moment
/// while a segment is created).
Result<std::vector<std::string>> collect_segments(const std::filesystem::path& dir = {},
                                                  std::string_view name_prefix = {});

}  // namespace strata
