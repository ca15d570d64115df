// SPDX-License-Identifier: MIT
// Which exposure `exposure = "auto"` picks on this machine, and why
// (docs/external.md, "Exposures"). One decision, shared by the runtime and
// `strata doctor`, so the doctor's line says what a run will do.
//
// The rule: the memfd path wherever memfds with F_SEAL_FUTURE_WRITE work
// (Linux >= 5.1, no seccomp filter refusing memfd_create): it needs no daemon
// and copies nothing for blocks that already live in memfds. Otherwise
// strata-fsd (FUSE), when it mounts. Otherwise nothing: the task fails to
// start with both reasons.
//
// Thread safety: pick_automatic() may run on any thread; it calls the given
// FUSE check at most once.
// Errors: none of its own; the reasons are in AutoPick::reason.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "exposure.hpp"
#include "strata/error.hpp"

namespace strata::external {

struct AutoPick {
    std::optional<ExposureKind> kind;  ///< nullopt: neither exposure serves here
    std::string reason;                ///< one sentence: what was tried and what answered
};

/// Decides from the memfd probe (MemfdExposure::probe) and, only when memfd
/// does not serve, from `fuse_check` (starts strata-fsd: ok when it mounted).
AutoPick pick_automatic(const Result<void>& memfd_probe, const std::function<Result<void>()>& fuse_check);

}  // namespace strata::external
