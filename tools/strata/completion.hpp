// `strata completion bash`: a bash completion script generated from the
// command's own CLI11 definition (subcommands and options at every level), so
// it cannot drift from the command. Installed as
// <datadir>/bash-completion/completions/strata (cmake/StrataInstall.cmake).
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace strata::cli {

/// The bash completion script for `app` (the top-level `strata` command).
std::string bash_completion(const CLI::App& app);

}  // namespace strata::cli
