// SPDX-License-Identifier: MIT
// Runtime options from the environment (docs/options.md).
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

Result<Options> Options::from_env() {
    Options options;
    if (const char* cpus = std::getenv("STRATA_CPUS"); cpus != nullptr && *cpus != '\0') {
        auto parsed = parse_cpus(cpus, "STRATA_CPUS");
        if (!parsed) {
            return std::unexpected(parsed.error());
        }
        options.cpus = std::move(*parsed);
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
