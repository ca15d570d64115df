// SPDX-License-Identifier: MIT
// Runtime options from the environment (docs/options.md).
#include <charconv>
#include <cstdlib>
#include <string_view>

#include "cpuset.hpp"
#include "strata/runtime.hpp"

namespace strata::runtime {

namespace {

Result<bool> env_flag(const char* name) {
    const char* value = std::getenv(name);
    if (value == nullptr) {
        return false;
    }
    const std::string_view text(value);
    if (text.empty() || text == "0" || text == "false" || text == "no" || text == "off") {
        return false;
    }
    if (text == "1" || text == "true" || text == "yes" || text == "on") {
        return true;
    }
    return make_error(Errc::invalid_argument, "{}={}: expected 0 or 1", name, text);
}

}  // namespace

Result<int> parse_workers(std::string_view text, std::string_view param) {
    int count = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), count);
    if (ec != std::errc{} || end != text.data() + text.size() || count < 1 || count > 4096) {
        return make_error(Errc::invalid_argument, "{}={}: expected a worker count from 1 to 4096", param, text);
    }
    return count;
}

Result<Options> Options::from_env() {
    Options options;
    if (const char* cpus = std::getenv("STRATA_CPUS"); cpus != nullptr && *cpus != '\0') {
        auto parsed = parse_cpus(cpus, "STRATA_CPUS");
        if (!parsed) {
            return std::unexpected(parsed.error());
        }
        options.cpus = std::move(*parsed);
    }
    if (const char* workers = std::getenv("STRATA_WORKERS"); workers != nullptr && *workers != '\0') {
        auto parsed = parse_workers(workers, "STRATA_WORKERS");
        if (!parsed) {
            return std::unexpected(parsed.error());
        }
        options.workers = *parsed;
    }
    auto stats = env_flag("STRATA_STATS");
    if (!stats) {
        return std::unexpected(stats.error());
    }
    options.print_stats = *stats;
    auto verbose = env_flag("STRATA_VERBOSE");
    if (!verbose) {
        return std::unexpected(verbose.error());
    }
    options.verbose = *verbose;
    if (const char* cover = std::getenv("STRATA_COVER_PRIORITY"); cover != nullptr && *cover != '\0') {
        auto parsed = parse_cover_priority(cover, "STRATA_COVER_PRIORITY");
        if (!parsed) {
            return std::unexpected(parsed.error());
        }
        options.cover_priority = *parsed;
    }
    options.monitor = monitor_from_env();
    return options;
}

}  // namespace strata::runtime
