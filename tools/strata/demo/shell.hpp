// Running other programs from `strata demo`: a shell command with a time limit
// (a hung job must not hang the demo), its output, and the programs built
// beside the strata binary.
#pragma once

#include <filesystem>
#include <string>

#include "strata/error.hpp"

namespace strata::cli {

struct CommandOutcome {
    int status = -1;     ///< as from waitpid
    std::string output;  ///< stdout and stderr
};

/// 'text' quoted for /bin/sh.
std::string shell_quoted(const std::string& text);

/// Runs `command` under /bin/sh, killed after `limit_s` seconds.
CommandOutcome run_shell(const std::string& command, int limit_s);

/// run_shell, an error (with the start of the output) unless it exits 0.
Result<CommandOutcome> run_shell_checked(const std::string& command, int limit_s);

/// bin/<name> beside the running strata binary, or not_found.
Result<std::filesystem::path> program_beside(const std::string& name);

}  // namespace strata::cli
