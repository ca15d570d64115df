// SPDX-License-Identifier: MIT
// Test-only hooks: lets crash tests stop a process at a critical point of the
// shm layer (with a lock held) so it can be SIGKILLed exactly there. Not for
// production use; with no hook set, each point costs one relaxed load.
#pragma once

namespace strata::shm_testing {

enum class CrashPoint {
    port_lock_held = 1,       ///< inside a port operation, holding the port's lock
    allocator_lock_held = 2,  ///< inside an allocation, holding the segment allocator's lock
};

/// Called at each point with the point; nullptr removes the hook.
using CrashHook = void (*)(CrashPoint point);
void set_crash_hook(CrashHook hook) noexcept;

}  // namespace strata::shm_testing
