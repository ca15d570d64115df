// SPDX-License-Identifier: MIT
// strata-bench-regions: how fast are the tiers of a Region once warm, and what
// does making storage durable cost?
//
//   1. limits     memcpy bandwidth; the disk under --dir with O_DIRECT
//   2. bandwidth  sequential/random read/write of malloc'd memory (baseline)
//                 and of every Region kind, as GB/s and as a ratio to malloc
//   3. sync       Region::sync() cost with 0, 1, 10, 100 % of pages dirty
//
// Run it through bench/regions/run (or `strata bench regions`), which writes
// docs/benchmarks/regions/results.{json,md} and regions.png; see the README
// there for how to read the numbers.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include <fmt/format.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include "bandwidth.hpp"
#include "cleanup.hpp"
#include "limits.hpp"
#include "machine.hpp"
#include "options.hpp"
#include "sync_cost.hpp"

namespace sb = strata::bench;

namespace {

constexpr std::size_t memory_margin = std::size_t{1} << 30;

std::string shell_quote(std::string_view arg) {
    if (!arg.empty() && arg.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                              "0123456789-_./=:,+@%") == std::string_view::npos) {
        return std::string(arg);
    }
    std::string quoted = "'";
    for (const char c : arg) {
        quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    }
    return quoted + "'";
}

// What produced the results: the wrapper's command line when it passes one
// (bench/regions/run, `strata bench regions`), else this program's argv.
std::string command_line(int argc, char** argv) {
    if (const char* given = std::getenv("STRATA_BENCH_COMMAND"); given != nullptr && *given != '\0') {
        return given;
    }
    std::string line;
    for (int i = 0; i < argc; ++i) {
        line += (i > 0 ? " " : "") + shell_quote(argv[i]);
    }
    return line;
}

void print_bandwidth(const sb::BandwidthSection& section, const sb::Limits& limits) {
    fmt::print("\n{:<17} {:>22} {:>22} {:>22} {:>22}\n", "GB/s (x malloc)", "seq_read", "seq_write", "rand_read",
               "rand_write");
    for (const auto& kind : section.kinds) {
        fmt::print("{:<17}", kind.kind);
        for (const auto pattern : sb::all_patterns) {
            for (const auto& r : section.results) {
                if (r.kind == kind.kind && r.pattern == pattern) {
                    fmt::print(" {:>13.2f} ({:5.2f}x)", r.gbps.median, r.ratio_to_malloc.median);
                }
            }
        }
        fmt::print("\n");
    }
    fmt::print("{:<17} {:>13.2f}\n\n", "memcpy", limits.memcpy_gbps.median);
}

bool write_json(const std::filesystem::path& path, const nlohmann::json& doc) {
    const auto temporary = path.string() + ".partial";
    {
        std::ofstream out(temporary);
        out << doc.dump(2) << '\n';
        if (!out) {
            fmt::print(stderr, "--json={}: cannot write {}\n", path.string(), temporary);
            return false;
        }
    }
    std::error_code ec;
    std::filesystem::rename(temporary, path, ec);
    if (ec) {
        fmt::print(stderr, "--json={}: cannot rename {}: {}\n", path.string(), temporary, ec.message());
        return false;
    }
    return true;
}

int run(const sb::Options& options, const std::string& command) {
    sb::Cleanup cleanup;
    auto fs = sb::read_fs_info(options.parent_dir);
    if (!fs) {
        fmt::print(stderr, "strata-bench-regions: {}\n", fs.error().what());
        return 2;
    }
    if (fs->in_memory) {
        fmt::print(stderr,
                   "strata-bench-regions: --dir={}: is on {} (memory), so storage regions and the "
                   "disk limit would measure RAM; pass a directory on a disk-backed file system, "
                   "e.g. --dir /var/tmp\n",
                   options.parent_dir.string(), fs->type);
        return 2;
    }
    const sb::Machine machine = sb::read_machine();
    const std::size_t needed = sb::bandwidth_memory_needed(options.size) + memory_margin;
    if (machine.mem_available < needed) {
        fmt::print(stderr,
                   "strata-bench-regions: --size={}: the warm bandwidth section keeps 7 copies "
                   "resident and needs about {} of memory, but MemAvailable is {}; use a smaller "
                   "--size\n",
                   sb::format_size(options.size), sb::format_size(needed / (1 << 20) << 20),
                   sb::format_size(machine.mem_available / (1 << 20) << 20));
        return 2;
    }
    auto work_dir = cleanup.make_work_dir(options.parent_dir);
    if (!work_dir) {
        fmt::print(stderr, "strata-bench-regions: {}\n", work_dir.error().what());
        return 2;
    }
    fmt::print("machine: {} cores, {} memory, kernel {}, CPU {}, THP {}\n", machine.cores,
               sb::format_size(machine.mem_total / (1 << 20) << 20), machine.kernel, machine.cpu_model, machine.thp);
    fmt::print("storage: {} ({} on {}, rotational={}); region size {}, {} repeats\n", work_dir->string(), fs->type,
               fs->device, fs->rotational, sb::format_size(options.size), options.repeats);

    fmt::print("\n[1/3] physical limits\n");
    auto limits = sb::run_limits(options, *work_dir, cleanup);
    if (!limits) {
        fmt::print(stderr, "strata-bench-regions: {}\n", limits.error().what());
        return 1;
    }
    fmt::print("\n[2/3] bandwidth (warm: every page touched and cached before timing)\n");
    auto bandwidth = sb::run_bandwidth(options, *work_dir, cleanup);
    if (!bandwidth) {
        fmt::print(stderr, "strata-bench-regions: {}\n", bandwidth.error().what());
        return 1;
    }
    print_bandwidth(*bandwidth, *limits);
    fmt::print("[3/3] sync cost of a {} storage region\n", sb::format_size(options.size));
    auto sync = sb::run_sync_cost(options, *work_dir, cleanup);
    if (!sync) {
        fmt::print(stderr, "strata-bench-regions: {}\n", sync.error().what());
        return 1;
    }

    nlohmann::json doc = {
        {"suite", "regions"},
        {"schema", 1},
        {"command", command},
        {"machine", machine},
        {"storage", *fs},
        {"config",
         {{"size", options.size},
          {"repeats", options.repeats},
          {"page_size", sysconf(_SC_PAGESIZE)},
          {"dir", work_dir->string()},
          {"warm", true},
          {"threads", 1},
          {"units", "GB/s = 1e9 bytes/s; MB/s = 1e6 bytes/s; sizes in bytes"},
          {"random_pattern",
           "every page once per run, whole 4 KiB pages (8-byte words), pages in one fixed "
           "shuffled order"}}},
        {"limits", *limits},
        {"bandwidth", *bandwidth},
        {"sync", *sync},
    };
    for (const auto& [writeback, layouts] : doc["sync"]["ratios"].items()) {
        for (const auto& [layout, r] : layouts.items()) {
            fmt::print("  sync {:<13} {:<10} cost(100%)/cost(10%) = {:5.2f}, cost(10%)/cost(1%) = {:5.2f}\n", writeback,
                       layout, r["100_over_10"].get<double>(), r["10_over_1"].get<double>());
        }
    }
    if (!options.json.empty() && !write_json(options.json, doc)) {
        return 1;
    }
    cleanup.remove_all();
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    // Progress lines appear as they happen even when the output is a pipe or a file.
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    int exit_code = 0;
    const sb::Options options = sb::parse_options(argc, argv, exit_code);
    if (exit_code >= 0) {
        return exit_code;
    }
    try {
        return run(options, command_line(argc, argv));
    } catch (const std::exception& e) {
        fmt::print(stderr, "strata-bench-regions: {}\n", e.what());
        return 1;
    }
}
