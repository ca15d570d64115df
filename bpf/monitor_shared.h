/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/* The memory layout shared by bpf/monitor.bpf.c and the ebpf backend of the
 * blocking monitor (src/monitor/ebpf_backend.cpp). C, so both sides compile it. */
#ifndef STRATA_MONITOR_SHARED_H
#define STRATA_MONITOR_SHARED_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Two cache lines per core in the BPF_F_MMAPABLE array `cores`: the first
 * holds `ready`, which user space reads with a plain load, the flags and the
 * counters the block and wakeup programs change; the second the wake-up wait
 * statistics, which the switch into a woken worker changes. */
struct strata_monitor_core {
    __s32 ready;          /* registered workers of this core that are not blocked */
    __u32 settle_armed;   /* user space sets 1: send one event when a block leaves one ready worker */
    __u64 blocks;         /* switched out, not preempted, prev_state != TASK_RUNNING */
    __u64 unblocks;       /* wakeups of a worker recorded as blocked */
    __u64 switches;       /* every switch away from a registered worker */
    __u64 last_change_ns; /* bpf_ktime_get_ns() of the last change of `ready` */
    __u64 no_ready_ns;    /* time spent with ready == 0 */
    __u64 oversub_ns;     /* time spent with ready > 1 */
    __u32 events;         /* ring-buffer events sent */
    __u32 woken_armed;    /* user space sets 1: send one event when a wakeup gives the core two ready workers */
    /* Second cache line. An oversubscribing wakeup is one that gives the core
     * a second (or further) ready worker. oversub_wait_ns is the part of
     * oversub_ns during which some woken worker had not run yet since its
     * wakeup: time it waited for its CPU rather than ran. */
    __u64 oversub_wakeups; /* wakeups of a blocked worker that found another ready worker on its core */
    __u64 oversub_wait_ns; /* time with ready > 1 and waiting > 0 */
    __s32 waiting;         /* workers woken from a block that have not run since */
    /* User space: a worker of this core spins in standby (idle+standby). Not
     * counted in `ready`, its switches ignored, and a block that empties the
     * core sends no event: the standby worker sees it and takes over. */
    __u32 standby_tid;
    __u64 reserved[5];
};

/* Value of the hash map `workers`, keyed by thread id. */
struct strata_monitor_worker {
    __u32 core;
    __u32 blocked; /* 1 between a block and the wakeup that ends it */
    __u32 waiting; /* 1 from its wakeup until it runs */
    __u32 pad;
};

#define STRATA_MONITOR_EVENT_EMPTY 0   /* a block left `core` with no ready worker */
#define STRATA_MONITOR_EVENT_SETTLED 1 /* armed: a block took `core` from two ready workers to one */
#define STRATA_MONITOR_EVENT_WOKEN 2   /* armed: a wakeup took `core` from one ready worker to two or more */

/* The ring-buffer record. */
struct strata_monitor_event {
    __u32 core;
    __u32 tid;      /* the worker whose block or wakeup changed the count */
    __u64 time_ns;  /* bpf_ktime_get_ns() (CLOCK_MONOTONIC) at the block or wakeup */
    __u64 unblocks; /* the core's unblock count right after it */
    __u32 kind;     /* STRATA_MONITOR_EVENT_* */
    __u32 pad;
};

#endif
