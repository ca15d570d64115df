// SPDX-License-Identifier: MIT
// `strata bench <suite>`: each suite is a script <bench dir>/<suite>/run
// (paths::bench_dir(): <prefix>/share/strata/bench when installed, the source
// tree's bench/ from a build tree); this finds it and the harness binaries
// (paths::helper_dir()) and hands over, or, on a terminal, runs it and shows
// its progress (bench_watch.cpp). `strata bench --list` lists the suites.
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench_watch.hpp"
#include "commands.hpp"
#include "paths.hpp"

namespace strata::cli {

namespace {

struct Suite {
    std::string name;
    std::string summary;  ///< the run script's first comment line
};

// The suites under `dir`, sorted by name: every directory with an executable `run`.
std::vector<Suite> find_suites(const std::filesystem::path& dir) {
    std::vector<Suite> suites;
    std::error_code ec;
    for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const auto run = it->path() / "run";
        if (::access(run.c_str(), X_OK) != 0) {
            continue;
        }
        Suite suite{it->path().filename().string(), ""};
        std::ifstream in(run);
        for (std::string line; std::getline(in, line);) {
            if (line.starts_with("#!")) {
                continue;
            }
            if (line.starts_with("# ")) {
                suite.summary = line.substr(2);
            }
            break;
        }
        suites.push_back(std::move(suite));
    }
    std::sort(suites.begin(), suites.end(), [](const Suite& a, const Suite& b) { return a.name < b.name; });
    return suites;
}

}  // namespace

int list_bench_suites(bool json) {
    const auto dir = paths::bench_dir();
    const auto suites = find_suites(dir);
    if (suites.empty()) {
        fmt::print(stderr, "strata bench: no suites in {} (set STRATA_BENCH_DIR to a directory of <suite>/run)\n",
                   dir.string());
        return 1;
    }
    if (json) {
        nlohmann::ordered_json list = nlohmann::ordered_json::array();
        for (const auto& suite : suites) {
            list.push_back(
                {{"name", suite.name}, {"summary", suite.summary}, {"run", (dir / suite.name / "run").string()}});
        }
        fmt::print("{}\n", list.dump(2));
        return 0;
    }
    for (const auto& suite : suites) {
        fmt::print("{:<16} {}\n", suite.name, suite.summary);
    }
    return 0;
}

int run_bench(const std::string& suite, const std::vector<std::string>& args, bool quiet) {
    const auto dir = paths::bench_dir();
    const std::filesystem::path script = dir / suite / "run";
    if (suite.empty() || suite.find('/') != std::string::npos || suite.front() == '.' ||
        ::access(script.c_str(), X_OK) != 0) {
        std::string known;
        for (const auto& s : find_suites(dir)) {
            known += (known.empty() ? "" : ", ") + s.name;
        }
        fmt::print(stderr, "strata bench: suite={}: no such suite (no executable {}); suites: {}\n", suite,
                   script.string(), known.empty() ? "none" : known);
        return 2;
    }
    ::setenv("STRATA_BIN_DIR", paths::helper_dir().c_str(), 0);
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
    // A suite's --help is over before a line could say anything.
    const bool help = std::find_if(args.begin(), args.end(),
                                   [](const std::string& a) { return a == "-h" || a == "--help"; }) != args.end();
    progress::Line line({.enabled = !quiet && !help, .prefix = "strata bench " + suite, .elapsed = true});
    if (line.active()) {
        return watch_suite(script, argv, line);
    }
    ::execv(script.c_str(), argv.data());
    fmt::print(stderr, "strata bench: cannot run {}: {}\n", script.string(), std::strerror(errno));
    return 1;
}

}  // namespace strata::cli
