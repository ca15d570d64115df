// SPDX-License-Identifier: MIT
#include "command.hpp"

#include <sys/wait.h>
#include <cstdio>

#include <fmt/format.h>

#include "paths.hpp"

namespace strata::cli {

std::string shell_quoted(const std::string& text) {
    std::string out = "'";
    for (char c : text) {
        out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    }
    return out + "'";
}

CommandOutcome run_command(const std::string& command) {
    CommandOutcome outcome;
    // stdin from /dev/null: timeout runs the command in a process group of its
    // own, not the terminal's foreground group, and mpiexec reading a terminal
    // from there stops on SIGTTIN until the time limit (`strata demo` typed in
    // a terminal failed its mpiexec steps that way). No demo program reads stdin.
    FILE* pipe = ::popen(("exec </dev/null; timeout 60 " + command + " 2>&1").c_str(), "r");
    if (pipe == nullptr) {
        return outcome;
    }
    char buffer[512];
    while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) {
        outcome.output += buffer;
    }
    outcome.status = ::pclose(pipe);
    return outcome;
}

Result<CommandOutcome> run_checked(const std::string& command) {
    CommandOutcome outcome = run_command(command);
    if (outcome.status != 0) {
        const bool timed_out = WIFEXITED(outcome.status) && WEXITSTATUS(outcome.status) == 124;
        return make_error(Errc::io_error, "{} {}: {}", command, timed_out ? "timed out after 60 s" : "failed",
                          outcome.output.substr(0, 400));
    }
    return outcome;
}

Result<std::filesystem::path> program_beside_strata(const std::string& name) {
    auto path = paths::find_helper(name);
    if (!path) {
        return make_error(Errc::not_found, "{}: not in {} (it is built with the tests: STRATA_BUILD_TESTS=ON)", name,
                          paths::helper_dir().string());
    }
    return *path;
}

}  // namespace strata::cli
