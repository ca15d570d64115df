// SPDX-License-Identifier: MIT
#include "core/log.hpp"

#include <cstdlib>
#include <cstring>

#include <spdlog/sinks/stdout_color_sinks.h>

namespace strata::detail {

namespace {
spdlog::level::level_enum level_from_environment() {
    if (const char* level = std::getenv("STRATA_LOG"); level != nullptr && *level != '\0') {
        return spdlog::level::from_str(level);
    }
    const char* verbose = std::getenv("STRATA_VERBOSE");
    if (verbose != nullptr && std::strcmp(verbose, "0") != 0 && *verbose != '\0') {
        return spdlog::level::debug;
    }
    return spdlog::level::warn;
}
}  // namespace

spdlog::logger& log() {
    // A logger of our own, not spdlog's default, so programs that use spdlog
    // themselves keep their configuration.
    static const std::shared_ptr<spdlog::logger> logger = [] {
        auto l = std::make_shared<spdlog::logger>("strata", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
        l->set_pattern("strata: %l: %v");
        l->set_level(level_from_environment());
        return l;
    }();
    return *logger;
}

}  // namespace strata::detail
