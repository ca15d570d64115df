// Which kernel policy covering workers get (cover.cpp).
#pragma once

#include <string>

#include "strata/runtime.hpp"

namespace strata::runtime::detail {

struct CoverChoice {
    bool idle = false;   ///< covering workers run at SCHED_IDLE
    std::string reason;  ///< one line: the request, the choice and why
};

/// Resolves `requested` for this process: idle needs a monitor (without one
/// no worker covers) and the right to take a thread back from SCHED_IDLE,
/// which is tried on a short-lived thread. Errors: permission_denied when
/// idle was requested explicitly and that right is missing.
Result<CoverChoice> choose_cover_priority(CoverPriority requested, bool monitored);

}  // namespace strata::runtime::detail
