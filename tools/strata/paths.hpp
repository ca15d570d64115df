// SPDX-License-Identifier: MIT
// Where the `strata` command finds its helper programs, its libraries and its
// benchmark suites. Everything is found relative to the running executable, so
// the same binary works in a build tree (helpers beside it in <build>/bin) and
// in an installed prefix (helpers in <prefix>/libexec/strata, suites in
// <prefix>/share/strata/bench; docs/install.md), never through a compiled-in
// source path.
#pragma once

#include <filesystem>
#include <optional>
#include <string_view>

namespace strata::cli::paths {

/// The directory of the running executable (/proc/self/exe, symlinks resolved);
/// empty if /proc is not mounted.
std::filesystem::path self_dir();

/// The directory of the helper programs: <bindir>/../libexec/strata when it
/// exists (an installed prefix), else the executable's own directory (a build tree).
std::filesystem::path helper_dir();

/// A helper program (strata-workflow-task, strata-mpi-probe, a benchmark
/// harness, a demo program) found beside the executable or in helper_dir();
/// nullopt when it is in neither.
std::optional<std::filesystem::path> find_helper(std::string_view name);

/// The directory of the libstrata this process loaded (found with dladdr);
/// libstrata-mpi and libstrata-ocr are installed beside it. Empty if unknown.
std::filesystem::path library_dir();

/// The directory holding the benchmark suites (<suite>/run): $STRATA_BENCH_DIR
/// if set, else <bindir>/../share/strata/bench (in a build tree, a symlink to
/// the source tree's bench/ made at configure time).
std::filesystem::path bench_dir();

/// The flagship workflow's scripts (flagship.py, analysis.py, flagship.toml; examples/flagship):
/// <bindir>/../share/strata/flagship (in a build tree, a symlink to the source tree's
/// examples/flagship made at configure time).
std::filesystem::path flagship_dir();

}  // namespace strata::cli::paths
