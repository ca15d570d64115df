// SPDX-License-Identifier: MIT
// `strata completion [bash|zsh|fish]`: a shell completion script generated
// from the command's own CLI11 definition (subcommands and options at every
// level, with their descriptions for zsh and fish; the suite names after
// `strata bench` come from `strata bench --list` when completing), so it cannot
// drift from the command. Installed by cmake/StrataInstall.cmake as
// <datadir>/bash-completion/completions/strata,
// <datadir>/zsh/vendor-completions/_strata and
// <datadir>/fish/vendor_completions.d/strata.fish.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace strata::cli {

/// The shells completion_script() writes for: bash, zsh, fish.
std::vector<std::string> completion_shells();

/// The completion script for `shell` (one of completion_shells()) of `app`, the top-level `strata` command.
std::string completion_script(const CLI::App& app, const std::string& shell);

}  // namespace strata::cli
