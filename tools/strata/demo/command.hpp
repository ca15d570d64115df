// SPDX-License-Identifier: MIT
// Running the programs a demo section starts (mpiexec jobs, example binaries
// built beside strata), with a time limit so a hung job cannot hang the demo.
#pragma once

#include <filesystem>
#include <string>

#include "strata/error.hpp"

namespace strata::cli {

/// The text in single quotes for /bin/sh.
std::string shell_quoted(const std::string& text);

struct CommandOutcome {
    int status = -1;     ///< as from pclose (wait status); -1 when it could not start
    std::string output;  ///< stdout and stderr together
};

/// Runs a /bin/sh command under `timeout 60`, stdin from /dev/null.
CommandOutcome run_command(const std::string& command);

/// run_command, and an io_error naming the command, "timed out" or "failed", and the output's start unless it exits 0.
Result<CommandOutcome> run_checked(const std::string& command);

/// A program built beside the strata binary (with the tests), or installed in
/// <prefix>/libexec/strata (paths::find_helper); not_found naming where it looked otherwise.
Result<std::filesystem::path> program_beside_strata(const std::string& name);

}  // namespace strata::cli
