// SPDX-License-Identifier: MIT
// The control protocol between a FuseExposure (the runtime) and strata-fsd.
//
// One ZeroMQ REQ/REP pair over ipc://<private dir>/ctl (the directory is a
// mkdtemp 0700 directory, so only its owner can connect). Each request and
// each reply is one frame of space-separated words; the runtime sends one
// request at a time and waits for its reply.
//
//   in <task> <id> <size> shm <fd> <offset> <cache>   input whose bytes are in the owner's fd
//   in <task> <id> <size> vm <address> <cache>        input in the owner's private memory
//   out <task> <id>                                   empty, growable output
//   temporaries <task>                                its programs may create files under /db
//   started <task> <pid>                              the task's root process
//   take <task> <id>                                  -> ok <daemon fd> <size>
//   end <task>                                        drop every file of the task
//   quit                                              unmount and exit
//
// Replies: "ok [words...]" or "err <errno> <message>". <cache> is 1 when the
// daemon pushes the bytes into the kernel's page cache at registration (the
// fast path). Descriptors never travel over the socket: each side opens the
// other's /proc/<pid>/fd/<n>, which the daemon, a child of the owner running
// as the same user, is allowed to (ptrace read access), and which the owner
// is allowed to for its own child.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace strata::external::fsd {

/// Name of the mount's file system type suffix ("fuse.strata-fsd") and of the
/// daemon binary; the mount source is "strata-fsd:<daemon pid>".
inline constexpr std::string_view kName = "strata-fsd";
/// The directory under the mount point that holds the registered files.
inline constexpr std::string_view kDbDir = "db";

/// Splits a frame into words (single spaces; the last word of an error keeps its spaces).
inline std::vector<std::string_view> split_words(std::string_view text, std::size_t max_words = 64) {
    std::vector<std::string_view> words;
    while (!text.empty() && words.size() + 1 < max_words) {
        const auto space = text.find(' ');
        words.push_back(text.substr(0, space));
        if (space == std::string_view::npos) {
            return words;
        }
        text.remove_prefix(space + 1);
    }
    if (!text.empty()) {
        words.push_back(text);
    }
    return words;
}

/// Parses a whole word as an unsigned number.
inline std::optional<std::uint64_t> parse_u64(std::string_view word) {
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), value);
    if (ec != std::errc{} || end != word.data() + word.size()) {
        return std::nullopt;
    }
    return value;
}

}  // namespace strata::external::fsd
