// SPDX-License-Identifier: MIT
// `strata doctor`: one real probe per capability strata uses.
#pragma once

namespace strata::doctor {

struct Options {
    bool json = false;  ///< print one JSON document instead of the table
};

/// Runs every probe, prints the report, returns the process exit code:
/// 0 when everything the defaults need is present, 1 otherwise.
int run(const Options& options);

}  // namespace strata::doctor
