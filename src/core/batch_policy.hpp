// SPDX-License-Identifier: MIT
// The scheduling policy of strata's background pollers: the DSM's progress
// threads (docs/dsm.md, "Transport") and distributed OCR's communication
// thread (docs/runtime.md, "Communication never holds a worker").
#pragma once

#include <pthread.h>
#include <sched.h>

namespace strata::core {

/// Puts the thread that made it at SCHED_BATCH while wanted (set), if it ran
/// at SCHED_OTHER when this was made (a thread at a real-time or idle policy
/// keeps its own); the destructor, on the same thread, restores SCHED_OTHER. A
/// batch thread's wakeup does not preempt the thread running on its core: it
/// waits for that thread's slice to end or for it to block. A poller that wakes
/// often thus stops taking slices from the compute it shares a core with.
/// Nothing here fails: a policy the kernel refuses leaves the thread as it was.
class BatchPolicy {
public:
    /// `batch`: whether the thread runs at SCHED_BATCH from now on.
    explicit BatchPolicy(bool batch) {
        sched_param param{};
        int policy = 0;
        allowed_ = pthread_getschedparam(pthread_self(), &policy, &param) == 0 && policy == SCHED_OTHER;
        set(batch);
    }
    ~BatchPolicy() { set(false); }
    BatchPolicy(const BatchPolicy&) = delete;
    BatchPolicy& operator=(const BatchPolicy&) = delete;
    BatchPolicy(BatchPolicy&&) = delete;
    BatchPolicy& operator=(BatchPolicy&&) = delete;

    /// Switches the calling thread (the one that made it) to SCHED_BATCH or back to SCHED_OTHER;
    /// one system call when the policy changes, none otherwise.
    void set(bool batch) {
        if (!allowed_ || batch == active_) {
            return;
        }
        sched_param param{};
        if (pthread_setschedparam(pthread_self(), batch ? SCHED_BATCH : SCHED_OTHER, &param) == 0) {
            active_ = batch;
        }
    }

private:
    bool allowed_ = false;
    bool active_ = false;
};

}  // namespace strata::core
