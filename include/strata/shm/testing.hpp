// SPDX-License-Identifier: MIT
// Test-only hooks: lets crash tests stop a process at a critical point of the
// shm layer (with a lock held) so it can be SIGKILLed exactly there. Not for
// production use; with no hook set, each point costs one relaxed load.
#pragma once

namespace strata::shm_testing {

enum class CrashPoint {
    port_lock_held = 1,       ///< inside a port operation, holding the port's lock
    allocator_lock_held = 2,  ///< inside an allocation, holding the segment allocator's lock
    // Between two steps of a port's critical sections (src/shm/port_layout.hpp), holding its lock:
    port_loan_claimed = 3,      ///< loan: the slot is marked loaned, the write sequence not yet moved on
    port_commit_published = 4,  ///< commit: the slot is committed, its fast-path word not yet set
    port_holder_dropped = 5,    ///< release, skip or leave: a consumer's bit is cleared, the slot not yet freed
    port_peer_leaving = 6,      ///< close: the user is marked closed, its slots and the counts not yet settled
    port_peer_joining = 7,      ///< Segment::port: the user is marked active, the counts not yet updated
    port_peer_recovering = 8,   ///< a dead user's slots are recovered, its death not yet reported
};

/// Called at each point with the point; nullptr removes the hook.
using CrashHook = void (*)(CrashPoint point);
void set_crash_hook(CrashHook hook) noexcept;

}  // namespace strata::shm_testing
