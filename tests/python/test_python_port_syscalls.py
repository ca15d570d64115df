# SPDX-License-Identifier: MIT
"""System calls per Python port handoff between two processes, counted per thread with perf tracepoint
counters (syscall_counter.py): the typical (median) blocking recv() makes one futex wait and nothing else,
a send() one futex wake and nothing else; a busy-poll send() that finds a slot free makes none. Besides
those, a port probes its peers' liveness (one fcntl) at most every 20 ms, counted apart. Medians for
blocking handoffs, because a send that finds every slot in use waits (backpressure, when the consumer
lost its core on a busy machine): those waits are not the handoff's."""

import fcntl
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from capability import require
from syscall_counter import SyscallCounter

HANDOFFS = 300

# The producer: paced sends of segment arrays (300 µs apart, so a blocking consumer is
# asleep when a message comes), counting the system calls of each send(); prints the totals.
PRODUCER = r"""
import json, os, sys, time
sys.path.insert(0, sys.argv[3])
import numpy as np, strata
from syscall_counter import SyscallCounter
if len(os.sched_getaffinity(0)) >= 2:
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # never on the consumer's core
seg = strata.Segment(sys.argv[1], "open_only")
out = seg.port("p", "producer", sync=sys.argv[2])
bufs = [seg.make(np.int64, 64) for _ in range(3)]  # 2 slots: buffer i % 3 is free again when i is sent
every, futex = SyscallCounter("raw_syscalls/sys_enter"), SyscallCounter("syscalls/sys_enter_futex")
probe = SyscallCounter("syscalls/sys_enter_fcntl")
calls = {"all": [], "futex": [], "probe": [], "span": []}
for i in range(int(sys.argv[4])):
    until = time.perf_counter_ns() + 300_000
    while time.perf_counter_ns() < until:
        pass
    buf = bufs[i % 3]
    buf[0] = i
    if sys.argv[2] == "busy_poll":
        # Only a send that finds a slot free is the handoff's: a full port (the consumer lost its
        # core on a loaded machine) is waited for here, uncounted, by retrying a send that does
        # not wait (timeout=0). Retries spin in Python and make no system call of their own.
        while True:
            t0 = time.perf_counter_ns()
            a0, f0, p0 = every.read(), futex.read(), probe.read()
            try:
                out.send(buf, timeout=0)
            except strata.Error as e:
                if e.code != "timeout":
                    raise
                continue
            a1, f1, p1 = every.read(), futex.read(), probe.read()
            calls["span"].append([t0, time.perf_counter_ns()])
            break
    else:
        a0, f0, p0 = every.read(), futex.read(), probe.read()
        out.send(buf)
        a1, f1, p1 = every.read(), futex.read(), probe.read()
    calls["all"].append(a1 - a0 - 3)
    calls["futex"].append(f1 - f0)
    calls["probe"].append(p1 - p0)
out.close()
print(json.dumps(calls), flush=True)
"""


def counters():
    try:
        return (
            SyscallCounter("raw_syscalls/sys_enter"),
            SyscallCounter("syscalls/sys_enter_futex"),
            SyscallCounter("syscalls/sys_enter_fcntl"),
        )
    except OSError as e:
        require(False, f"perf tracepoint counters: {e}")


def handoffs(strata_module, segment_name, sync):
    """HANDOFFS paced handoffs from a producer process; returns the system calls of each recv() and each
    send(), as lists per handoff (the first handoff, which waits for the producer to start, left out)."""
    every, futex, probe = counters()
    seg = strata_module.Segment(segment_name, "create_only", 1 << 20)
    inp = seg.port("p", "consumer", slots=2, sync=sync)
    producer = subprocess.Popen(
        [sys.executable, "-c", PRODUCER, segment_name, sync, str(Path(__file__).parent), str(HANDOFFS)],
        stdout=subprocess.PIPE,
        text=True,
    )
    calls = {"all": [], "futex": [], "probe": []}
    # Producer and consumer on cores of their own: a busy-poll pair sharing one core (a loaded
    # machine can put them there) would make each wait for the other to yield.
    cpus = os.sched_getaffinity(0)
    if len(cpus) >= 2:
        os.sched_setaffinity(0, {sorted(cpus)[1]})
    try:
        for i in range(HANDOFFS):
            a0, f0, p0 = every.read(), futex.read(), probe.read()
            m = inp.recv(timeout=30)
            a1, f1, p1 = every.read(), futex.read(), probe.read()
            calls["all"].append(a1 - a0 - 3)
            calls["futex"].append(f1 - f0)
            calls["probe"].append(p1 - p0)
            assert m is not None and m.array[0] == i
            m.release()
        out, _ = producer.communicate(timeout=60)
    finally:
        os.sched_setaffinity(0, cpus)
        if producer.poll() is None:
            producer.kill()
            producer.wait()
        every.close()
        futex.close()
        probe.close()
    assert producer.returncode == 0
    inp.close()
    seg.close()
    sent = json.loads(out)
    return {k: v[1:] for k, v in calls.items()}, {k: v[1:] for k, v in sent.items()}


def own_calls(calls):
    """The system calls of each handoff other than the liveness probe (one fcntl F_OFD_GETLK per
    peer, due every 20 ms: a handoff that comes after a longer pause makes it, whatever the load)."""
    return [n - p for n, p in zip(calls["all"], calls["probe"], strict=True)]


def typical(calls):
    """The median number of (all but the liveness probe, futex) calls per handoff."""
    return statistics.median(own_calls(calls)), statistics.median(calls["futex"])


def test_the_counter_counts_one_direct_system_call_as_one():
    every, futex, probe = counters()
    a0, f0, p0 = every.read(), futex.read(), probe.read()
    os.getppid()
    fcntl.fcntl(0, fcntl.F_GETFD)
    a1, f1, p1 = every.read(), futex.read(), probe.read()
    assert (a1 - a0 - 3, f1 - f0, p1 - p0) == (2, 0, 1)


def test_a_blocking_handoff_costs_one_futex_wait_and_one_futex_wake_and_no_other_call(
    strata_module, segment_name
):
    consumer, producer = handoffs(strata_module, segment_name, "blocking")
    # At most the one futex call, and nothing else, in the typical handoff (0 when, on a loaded
    # machine, the consumer came late and found the message already there).
    for side, calls in (("recv()", consumer), ("send()", producer)):
        all_calls, futex_calls = typical(calls)
        assert all_calls <= 1 and all_calls == futex_calls, f"{side}: {calls}"
    assert sum(consumer["futex"]) >= len(consumer["futex"]) // 4, (
        f"the consumer hardly ever slept: {consumer}"
    )


LIVENESS_TICK_NS = 20_000_000  # a producer probes its consumers' liveness at most this often (docs/shm.md)


def test_a_busy_poll_send_that_finds_a_free_slot_makes_no_system_call_but_its_liveness_probe(
    strata_module, segment_name
):
    _, producer = handoffs(strata_module, segment_name, "busy_poll")
    assert max(producer["futex"]) == 0, f"a busy-poll send woke a futex: {producer['futex']}"
    assert max(own_calls(producer)) == 0, f"a send made a system call besides its liveness probe: {producer}"
    # The liveness probe (one fcntl per consumer) is due once per tick: two probing sends are a
    # tick apart, from the start of the first to the end of the second. A loaded machine spaces
    # the sends out and so makes more of them probe; a probe per send (sends 300 µs apart on a
    # quiet machine) fails this.
    assert max(producer["probe"]) <= 1, f"a send probed more than once: {producer['probe']}"
    probing = [span for span, n in zip(producer["span"], producer["probe"], strict=True) if n == 1]
    for first, second in zip(probing, probing[1:]):
        assert second[1] - first[0] >= LIVENESS_TICK_NS, (
            f"two sends made a system call {(second[1] - first[0]) / 1e6:.2f} ms apart, less than the "
            f"liveness tick: {producer['all']}"
        )
