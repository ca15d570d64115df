// SPDX-License-Identifier: MIT
// `strata bench SUITE` on a terminal: the suite runs as a child of strata,
// which draws the progress line while it runs (bench_watch.cpp).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "progress.hpp"

namespace strata::cli {

/// Runs `script` with `argv` (null-terminated) and shows its progress on `line`
/// until it exits; returns its exit code (128 + the signal that ended it).
///
/// The suite says where it is on the pipe named by $STRATA_PROGRESS_FD, one
/// line "STEP TOTAL TEXT" per step (TOTAL 0: not counted; bench/lib.sh's
/// strata_bench_progress, bench/bench_progress.py). Its stderr, and its stdout when
/// that is the terminal too, pass through strata, which erases the line before
/// each piece of output so that the two never mix. Like system(), strata
/// ignores SIGINT and SIGQUIT while the suite runs (the terminal sends them to
/// both), and passes SIGTERM and SIGHUP on to it.
int watch_suite(const std::filesystem::path& script, const std::vector<char*>& argv, progress::Line& line);

/// The progress line's text for one protocol line: "[STEP/TOTAL] TEXT", or
/// TEXT when TOTAL is 0; nullopt when `protocol_line` is not "STEP TOTAL TEXT".
std::optional<std::string> bench_step_text(std::string_view protocol_line);

}  // namespace strata::cli
