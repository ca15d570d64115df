// `strata bench <suite>`: each suite is a script bench/<suite>/run beside the
// harness binaries; this finds the tree and the binaries and hands over.
#include <unistd.h>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "commands.hpp"

namespace strata::cli {

int run_bench(const std::string& suite, const std::vector<std::string>& args) {
    const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe");
    const std::filesystem::path script = std::filesystem::path(STRATA_SOURCE_DIR) / "bench" / suite / "run";
    if (suite.empty() || suite.find('/') != std::string::npos || suite.front() == '.' ||
        !std::filesystem::exists(script)) {
        std::string known;
        for (const auto& entry :
             std::filesystem::directory_iterator(std::filesystem::path(STRATA_SOURCE_DIR) / "bench")) {
            if (std::filesystem::exists(entry.path() / "run")) {
                known += (known.empty() ? "" : ", ") + entry.path().filename().string();
            }
        }
        fmt::print(stderr, "strata bench: suite={}: no such suite (no script at {}); suites: {}\n", suite,
                   script.string(), known);
        return 2;
    }
    ::setenv("STRATA_BIN_DIR", exe.parent_path().c_str(), 0);
    // The report records the command that produced it.
    std::string command = "strata bench " + suite;
    for (const auto& a : args) {
        command += " " + a;
    }
    ::setenv("STRATA_BENCH_COMMAND", command.c_str(), 0);
    std::vector<std::string> storage{script.string()};
    storage.insert(storage.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : storage) {
        argv.push_back(a.data());
    }
    argv.push_back(nullptr);
    ::execv(script.c_str(), argv.data());
    fmt::print(stderr, "strata bench: cannot run {}: {}\n", script.string(), std::strerror(errno));
    return 2;
}

}  // namespace strata::cli
