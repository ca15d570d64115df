/* SPDX-License-Identifier: MIT */
/* libstrata-yield-poll: an LD_PRELOAD library for MPI runs with more busy
 * ranks than cores (the emulated nodes of the benchmarks: 4 or 8 ranks on 2 cores).
 *
 * MPICH 4.0.2's ch4:ucx polls UCX's TCP transport with epoll_wait(fd, ..., 0)
 * in a loop while it waits (a flush, a receive). A rank that spins that way
 * keeps its core until the scheduler's tick preempts it (4 ms at HZ=250), so
 * a message to a rank that shares a core with a spinner waits for that tick:
 * a one-sided DHT insert took milliseconds at 4 ranks on 2 cores where it takes
 * microseconds at 2. Neither MPICH (MPIR_CVAR_POLLS_BEFORE_YIELD,
 * MPIR_CVAR_CH4_RMA_ENABLE_DYNAMIC_AM_PROGRESS, MPIR_CVAR_ASYNC_PROGRESS) nor
 * UCX has a setting that yields there. This library makes every epoll_wait
 * that was asked not to block and found nothing call sched_yield(): a spinner
 * lets the other rank of its core run at once. Nothing else changes: waits
 * with a timeout, and polls that found events, return as before.
 *
 * strata_yield_poll_yields() counts the yields (for its test). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/epoll.h>

typedef int (*epoll_wait_fn)(int, struct epoll_event*, int, int);

static atomic_ulong yields;

unsigned long strata_yield_poll_yields(void) {
    return atomic_load_explicit(&yields, memory_order_relaxed);
}

int epoll_wait(int epfd, struct epoll_event* events, int maxevents, int timeout) {
    static _Atomic(epoll_wait_fn) real;
    epoll_wait_fn next = atomic_load_explicit(&real, memory_order_acquire);
    if (next == NULL) {
        next = (epoll_wait_fn)dlsym(RTLD_NEXT, "epoll_wait");
        atomic_store_explicit(&real, next, memory_order_release);
    }
    const int n = next(epfd, events, maxevents, timeout);
    if (n == 0 && timeout == 0) {
        atomic_fetch_add_explicit(&yields, 1, memory_order_relaxed);
        sched_yield();
    }
    return n;
}
