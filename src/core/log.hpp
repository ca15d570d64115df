// SPDX-License-Identifier: MIT
// strata's internal logger: spdlog, to stderr, level from STRATA_LOG
// (trace|debug|info|warn|error|off; default warn) or STRATA_VERBOSE=1 (debug).
#pragma once

#include <spdlog/spdlog.h>

namespace strata::detail {

/// The process-wide strata logger; created on first use, thread-safe.
spdlog::logger& log();

}  // namespace strata::detail
