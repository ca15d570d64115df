// SPDX-License-Identifier: MIT
// An external task's program in a container (`container = ...`, docs/external.md):
// the spawn request is rewritten to `crun run` of a bundle whose process is the
// program, with the task's data blocks visible inside — memfd descriptors
// passed at their numbers (so /proc/self/fd/N names the same file), or the FUSE
// mount bound in at its own path — and the segment directory bound at /dev/shm
// (so `[handle:K]` works inside too).
//
// Thread safety: may run on several workers at once.
// Errors: those of container::Bundle::create, prefixed with the entry's key;
// invalid_argument for a relative cwd; unsupported for a FUSE mount outside /tmp.
#pragma once

#include "config.hpp"
#include "container/container.hpp"
#include "exposure.hpp"
#include "launch.hpp"

namespace strata::external {

/// Rewrites `request` to run its program in the container `entry.container`
/// names; the returned bundle must live until the program has been reaped.
Result<container::Bundle> containerize(const Entry& entry, const TaskFiles& files, SpawnRequest& request);

}  // namespace strata::external
