# SPDX-License-Identifier: MIT
"""System calls per Python port handoff between two processes, counted per thread with perf tracepoint
counters (syscall_counter.py): the typical (median) blocking recv() makes one futex wait and nothing else,
a send() one futex wake and nothing else; a busy-poll send() makes none. Medians, because a send that
finds every slot in use waits (backpressure, when the consumer lost its core on a busy machine) and the
waits check the peers' liveness every 20 ms: those calls are not the handoff's."""

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
calls = {"all": [], "futex": []}
for i in range(int(sys.argv[4])):
    until = time.perf_counter_ns() + 300_000
    while time.perf_counter_ns() < until:
        pass
    buf = bufs[i % 3]
    buf[0] = i
    a0, f0 = every.read(), futex.read()
    out.send(buf)
    a1, f1 = every.read(), futex.read()
    calls["all"].append(a1 - a0 - 2)
    calls["futex"].append(f1 - f0)
out.close()
print(json.dumps(calls), flush=True)
"""


def counters():
    try:
        return SyscallCounter("raw_syscalls/sys_enter"), SyscallCounter("syscalls/sys_enter_futex")
    except OSError as e:
        require(False, f"perf tracepoint counters: {e}")


def handoffs(strata_module, segment_name, sync):
    """HANDOFFS paced handoffs from a producer process; returns the system calls of each recv() and each
    send(), as lists per handoff (the first handoff, which waits for the producer to start, left out)."""
    every, futex = counters()
    seg = strata_module.Segment(segment_name, "create_only", 1 << 20)
    inp = seg.port("p", "consumer", slots=2, sync=sync)
    producer = subprocess.Popen(
        [sys.executable, "-c", PRODUCER, segment_name, sync, str(Path(__file__).parent), str(HANDOFFS)],
        stdout=subprocess.PIPE,
        text=True,
    )
    calls = {"all": [], "futex": []}
    # Producer and consumer on cores of their own: a busy-poll pair sharing one core (a loaded
    # machine can put them there) would make each wait for the other to yield.
    cpus = os.sched_getaffinity(0)
    if len(cpus) >= 2:
        os.sched_setaffinity(0, {sorted(cpus)[1]})
    try:
        for i in range(HANDOFFS):
            a0, f0 = every.read(), futex.read()
            m = inp.recv(timeout=30)
            a1, f1 = every.read(), futex.read()
            calls["all"].append(a1 - a0 - 2)
            calls["futex"].append(f1 - f0)
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
    assert producer.returncode == 0
    inp.close()
    seg.close()
    sent = json.loads(out)
    return {k: v[1:] for k, v in calls.items()}, {k: v[1:] for k, v in sent.items()}


def typical(calls):
    """The median number of (all, futex) calls per handoff."""
    return statistics.median(calls["all"]), statistics.median(calls["futex"])


def test_the_counter_counts_one_direct_system_call_as_one():
    every, futex = counters()
    a0, f0 = every.read(), futex.read()
    os.getppid()
    a1, f1 = every.read(), futex.read()
    assert (a1 - a0 - 2, f1 - f0) == (1, 0)


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


def test_a_busy_poll_send_makes_no_system_call(strata_module, segment_name):
    _, producer = handoffs(strata_module, segment_name, "busy_poll")
    assert typical(producer) == (0, 0), f"send(): {producer}"
