// Shell helpers of `strata demo` (shell.hpp).
#include "shell.hpp"

#include <sys/wait.h>

#include <cstdio>

#include <fmt/format.h>

namespace strata::cli {

std::string shell_quoted(const std::string& text) {
    std::string out = "'";
    for (char c : text) {
        out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    }
    return out + "'";
}

CommandOutcome run_shell(const std::string& command, int limit_s) {
    CommandOutcome outcome;
    FILE* pipe = ::popen(fmt::format("timeout {} {} 2>&1", limit_s, command).c_str(), "r");
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

Result<CommandOutcome> run_shell_checked(const std::string& command, int limit_s) {
    CommandOutcome outcome = run_shell(command, limit_s);
    if (outcome.status != 0) {
        const bool timed_out = WIFEXITED(outcome.status) && WEXITSTATUS(outcome.status) == 124;
        return make_error(Errc::io_error, "{} {}: {}", command,
                          timed_out ? fmt::format("timed out after {} s", limit_s) : std::string("failed"),
                          outcome.output.substr(0, 600));
    }
    return outcome;
}

Result<std::filesystem::path> program_beside(const std::string& name) {
    const auto path = std::filesystem::read_symlink("/proc/self/exe").parent_path() / name;
    if (!std::filesystem::exists(path)) {
        return make_error(Errc::not_found, "{}: not built", path.string());
    }
    return path;
}

}  // namespace strata::cli
