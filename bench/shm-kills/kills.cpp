// SPDX-License-Identifier: MIT
// strata-bench-shm-kills: SIGKILLs producers and consumers of ports at random
// moments (tests/integration/shm_kill_rounds.hpp) and writes one JSON row per
// round: who was killed when, whether it held the port's lock, what the
// survivors were told and what they received. bench/shm-kills/run drives it.
//
//   strata-bench-shm-kills [--rounds N] [--seed S] [--max-delay-us U]
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#include <unistd.h>
#include <nlohmann/json.hpp>

#include "integration/shm_kill_rounds.hpp"
#include "strata/shm/segment.hpp"

namespace {

using strata::test::kills::Round;

constexpr const char* kUsage = "usage: strata-bench-shm-kills [--rounds N] [--seed S] [--max-delay-us U]\n";

nlohmann::ordered_json row(const Round& r) {
    return {{"index", r.index},
            {"config", r.config.name()},
            {"producers", r.config.producers},
            {"consumers", r.config.consumers},
            {"slots", r.config.slots},
            {"sync", r.config.sync == strata::PortSync::busy_poll ? "busy_poll" : "blocking"},
            {"widen", r.widen},
            {"victim", r.victim},
            {"delay_us", r.delay_us},
            {"in_lock", r.in_lock},
            {"repaired", r.repaired},
            {"committed", r.committed},
            {"delivered", r.delivered},
            {"in_flight_delivered", r.in_flight_delivered},
            {"lost", r.lost},
            {"duplicated", r.duplicated},
            {"out_of_order", r.out_of_order},
            {"phantom", r.phantom},
            {"survivors", r.survivors},
            {"named", r.named},
            {"broken", r.broken},
            {"first_error_ms", r.first_error_ms},
            {"last_error_ms", r.last_error_ms},
            {"failure", r.failure}};
}

/// A private directory for the run's segment, removed at the end.
struct SegmentDir {
    std::filesystem::path path;
    SegmentDir() {
        std::string pattern = (std::filesystem::temp_directory_path() / "strata-bench-kills-XXXXXX").string();
        if (::mkdtemp(pattern.data()) != nullptr) {
            path = pattern;
        }
    }
    SegmentDir(const SegmentDir&) = delete;
    SegmentDir& operator=(const SegmentDir&) = delete;
    ~SegmentDir() {
        std::error_code ignored;
        std::filesystem::remove_all(path, ignored);
    }
};

bool parse(int argc, char** argv, strata::test::kills::Options& o) {
    for (int i = 1; i < argc; i += 2) {
        const std::string arg = argv[i];
        if (i + 1 == argc) {
            return false;
        }
        char* end = nullptr;
        const long long value = std::strtoll(argv[i + 1], &end, 10);
        if (*end != '\0' || value <= 0) {
            std::fprintf(stderr, "strata-bench-shm-kills: %s=%s: not a positive integer\n", arg.c_str(), argv[i + 1]);
            return false;
        }
        if (arg == "--rounds") {
            o.rounds = static_cast<int>(value);
        } else if (arg == "--seed") {
            o.seed = static_cast<std::uint64_t>(value);
        } else if (arg == "--max-delay-us") {
            o.max_delay_us = static_cast<long>(value);
        } else {
            return false;
        }
    }
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 2 && (std::string(argv[1]) == "-h" || std::string(argv[1]) == "--help")) {
        std::fputs(kUsage, stdout);
        return 0;
    }
    strata::test::kills::Options options;
    options.rounds = 2000;
    options.seed = 28;
    if (!parse(argc, argv, options)) {
        std::fputs(kUsage, stderr);
        return 2;
    }
    const SegmentDir dir;
    if (dir.path.empty()) {
        std::perror("strata-bench-shm-kills: mkdtemp");
        return 1;
    }
    options.dir = dir.path;
    options.segment = "kills";
    nlohmann::ordered_json out = {{"rounds_asked", options.rounds},
                                  {"seed", options.seed},
                                  {"max_delay_us", options.max_delay_us},
                                  {"rounds", nlohmann::ordered_json::array()}};
    {
        auto seg =
            strata::Segment::open(options.segment, strata::SegmentMode::create_only, 64U << 20U, {.dir = options.dir});
        if (!seg) {
            std::fprintf(stderr, "strata-bench-shm-kills: %s\n", seg.error().what().c_str());
            return 1;
        }
        options.on_round = [&](const Round& r) {
            out["rounds"].push_back(row(r));
            if ((r.index + 1) % 100 == 0 || !r.failure.empty()) {
                std::fprintf(stderr, "round %d%s%s\n", r.index + 1, r.failure.empty() ? "" : ": ", r.failure.c_str());
            }
            return true;
        };
        (void)strata::test::kills::run_rounds(options);
        out["ports_reopen_error"] = strata::test::kills::check_ports_usable(options);
    }
    out["segment_files_left"] =
        std::distance(std::filesystem::directory_iterator(dir.path), std::filesystem::directory_iterator{});
    std::fputs(out.dump(1).c_str(), stdout);
    std::fputc('\n', stdout);
    return 0;
}
