// SPDX-License-Identifier: GPL-2.0
// The blocking monitor's kernel half (docs/monitor.md): per-core counts of
// registered worker threads that are ready, kept from sched_switch and
// sched_wakeup, and one ring-buffer event when a core is left with none (or,
// once per request from user space, when a block leaves it with one, or when
// a wakeup gives it a second: the runtime's surrender request).
//
// Only threads in `workers` (filled by user space) are tracked, not the whole
// process: io_uring workers and the runtime's own helper threads share its pid.
// Counters change with atomic instructions because a wakeup runs on the
// waker's CPU while the worker's own core may be switching (-mcpu=v3).
#include "vmlinux.h"

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "monitor_shared.h"

// Sizes are set by user space before load (bpf_map__set_max_entries).
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 4096);
    __type(key, __u32);
    __type(value, struct strata_monitor_worker);
} workers SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(map_flags, BPF_F_MMAPABLE);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct strata_monitor_core);
} cores SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 64 * 1024);
} events SEC(".maps");

// The monitored process, set by user space before load (.rodata: the
// verifier sees a constant). The programs run on every switch and wakeup of
// the machine; comparing the tgid first keeps other processes' switches to a
// load and a compare instead of a hash lookup.
const volatile __u32 target_tgid = 0;

#define STRATA_TASK_RUNNING 0
#define STRATA_TASK_DEAD 0x80

// Charges the time since the last change to the state the core was in, then
// applies `delta` to the ready count and `waiting` to the count of woken
// workers that have not run yet; returns the ready count before the change.
// Two CPUs changing one core at the same instant may charge a few
// nanoseconds to the wrong bucket.
static __always_inline __s32 change_state(struct strata_monitor_core* core, __s32 delta, __s32 waiting, __u64 now) {
    __u64 last = __sync_lock_test_and_set(&core->last_change_ns, now);
    __s32 before = __sync_fetch_and_add(&core->ready, delta);
    __s32 waited = waiting != 0 ? __sync_fetch_and_add(&core->waiting, waiting) : core->waiting;
    if (now > last) {
        if (before <= 0) __sync_fetch_and_add(&core->no_ready_ns, now - last);
        if (before > 1) __sync_fetch_and_add(&core->oversub_ns, now - last);
        if (before > 1 && waited > 0) __sync_fetch_and_add(&core->oversub_wait_ns, now - last);
    }
    return before;
}

// One event to user space. FORCE_WAKEUP: the consumer must learn of it now
// (an empty core, a woken worker), not when the buffer fills.
static __always_inline void emit_event(struct strata_monitor_core* core, __u32 index, __u32 tid, __u64 now,
                                       __u32 kind) {
    __sync_fetch_and_add(&core->events, 1);
    struct strata_monitor_event event = {
        .core = index,
        .tid = tid,
        .time_ns = now,
        .unblocks = core->unblocks,
        .kind = kind,
    };
    bpf_ringbuf_output(&events, &event, sizeof(event), BPF_RB_FORCE_WAKEUP);
}

// A woken worker runs again: the core's count of workers waiting for their
// CPU since their wakeup drops, and with it, if the core is oversubscribed,
// the waiting part of that time (oversub_wait_ns).
static __always_inline void end_wake_wait(struct task_struct* next) {
    __u32 tid = next->pid;
    struct strata_monitor_worker* worker = bpf_map_lookup_elem(&workers, &tid);
    if (!worker || worker->waiting == 0) return;
    if (__sync_val_compare_and_swap(&worker->waiting, 1, 0) != 1) return;
    __u32 index = worker->core;
    struct strata_monitor_core* core = bpf_map_lookup_elem(&cores, &index);
    if (!core) return;
    change_state(core, 0, -1, bpf_ktime_get_ns());
}

SEC("tp_btf/sched_switch")
int BPF_PROG(stmon_switch, bool preempt, struct task_struct* prev, struct task_struct* next, unsigned int prev_state) {
    if (next->tgid == (int)target_tgid) end_wake_wait(next);
    if (prev->tgid != (int)target_tgid) return 0;
    __u32 tid = prev->pid;
    struct strata_monitor_worker* worker = bpf_map_lookup_elem(&workers, &tid);
    if (!worker) return 0;
    __u32 index = worker->core;
    struct strata_monitor_core* core = bpf_map_lookup_elem(&cores, &index);
    if (!core) return 0;
    // The standby worker (idle+standby) is not counted while it spins.
    if (core->standby_tid == tid) return 0;
    __sync_fetch_and_add(&core->switches, 1);
    // A preempted thread stays runnable whatever its state word says; a yield
    // leaves it TASK_RUNNING. Neither is a block.
    if (preempt || prev_state == STRATA_TASK_RUNNING) return 0;
    if (__sync_val_compare_and_swap(&worker->blocked, 0, 1) != 0) return 0;

    __u64 now = bpf_ktime_get_ns();
    __sync_fetch_and_add(&core->blocks, 1);
    __s32 before = change_state(core, -1, 0, now);
    // An exiting worker never wakes up: forget it, so user space finds it
    // gone and does not count it twice.
    if (prev_state & STRATA_TASK_DEAD) bpf_map_delete_elem(&workers, &tid);
    __u32 kind = STRATA_MONITOR_EVENT_EMPTY;
    if (before == 2) {
        // Armed by a worker that is leaving an oversubscribed core: its cover
        // can be given the normal policy back now that it is alone.
        if (core->settle_armed == 0 || __sync_val_compare_and_swap(&core->settle_armed, 1, 0) != 1) return 0;
        kind = STRATA_MONITOR_EVENT_SETTLED;
    } else if (before != 1 || core->standby_tid != 0) {
        // A standby worker spins on this core: it sees the count reach zero
        // and takes over without the monitor's thread.
        return 0;
    }

    emit_event(core, index, tid, now, kind);
    return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(stmon_wakeup, struct task_struct* p) {
    if (p->tgid != (int)target_tgid) return 0;
    __u32 tid = p->pid;
    struct strata_monitor_worker* worker = bpf_map_lookup_elem(&workers, &tid);
    if (!worker) return 0;
    // sched_wakeup also fires for threads that never left the run queue; only
    // the wakeup that ends a recorded block counts, and only once.
    if (__sync_val_compare_and_swap(&worker->blocked, 1, 0) != 1) return 0;
    __u32 index = worker->core;
    struct strata_monitor_core* core = bpf_map_lookup_elem(&cores, &index);
    if (!core) return 0;
    __sync_fetch_and_add(&core->unblocks, 1);
    __u64 now = bpf_ktime_get_ns();
    // Waiting for its CPU until it runs (end_wake_wait).
    worker->waiting = 1;
    __s32 before = change_state(core, 1, 1, now);
    if (before >= 1) __sync_fetch_and_add(&core->oversub_wakeups, 1);
    // Armed by the runtime while a worker covers for a blocked one: the
    // blocked one is back, and the cover must give up the core now, not at
    // its next scheduling point. The event goes out from here, on the
    // waker's CPU, so user space learns it without waiting for either core.
    if (before < 1 || core->woken_armed == 0 || __sync_val_compare_and_swap(&core->woken_armed, 1, 0) != 1) return 0;
    emit_event(core, index, tid, now, STRATA_MONITOR_EVENT_WOKEN);
    return 0;
}

char LICENSE[] SEC("license") = "GPL";
