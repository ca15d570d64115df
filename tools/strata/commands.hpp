// Entry points of the `strata` subcommands; each lives in its own file.
#pragma once

#include <string>
#include <vector>

namespace strata::cli {

struct DemoOptions {
    std::string dir;  ///< where storage files go; a fresh directory under /var/tmp by default
    bool json = false;
};
/// `strata demo`: a short tour of every capability that exists; exit code.
int run_demo(const DemoOptions& options);

/// `strata bench <suite> [args...]`: runs bench/<suite>/run; exit code.
int run_bench(const std::string& suite, const std::vector<std::string>& args);

}  // namespace strata::cli
