# SPDX-License-Identifier: MIT
"""Handoff latency from Python between two processes: strata.Port beside the same handoff written by hand.

    python_handoff.py [--iterations 5000] [--repeats 5] [--elements 512]

Methods, measured in one run, interleaved (every repeat runs each method once):
  py/port/busy_poll   Port(sync="busy_poll"): the producer sends a segment array (by handle), the
                      consumer's recv() returns the Message with its numpy view
  py/baseline/spin    hand-written, the same work: numpy arrays over shared memory, a ring of 2 slots
                      naming which array each message carries; the consumer spins on a sequence
                      number and acknowledges (frees the slot) after reading
  py/port/blocking    Port(sync="blocking") (futex waits)
  py/baseline/pipe    the same ring, and one byte through a pipe wakes the consumer (blocked in os.read)

Latency = time.perf_counter_ns() (CLOCK_MONOTONIC, system-wide) from the producer's stamp, taken just
before it hands over (send(), or by hand: wait for a free slot, fill it, publish; the stamp is the
payload's first element), to the consumer holding the message and having read the stamp out of its
array. The producer (a forked child) runs on CPU 0, the consumer
on CPU 1; the producer paces handoffs 50 µs apart, so a blocking consumer is asleep when one comes.
Prints one JSON document (per method: median over the repeats of each run's percentiles).
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
import statistics
import sys
import time

import numpy as np
import strata

PACE_NS = 50_000
METHODS = ("py/port/busy_poll", "py/baseline/spin", "py/port/blocking", "py/baseline/pipe")
now = time.perf_counter_ns


def pin(cpu: int) -> None:
    if cpu < os.cpu_count():
        os.sched_setaffinity(0, {cpu})


def pace() -> None:
    until = now() + PACE_NS
    while now() < until:
        pass


def run_port(sync: str, iterations: int, elements: int) -> np.ndarray:
    name = f"bench-pyhandoff-{os.getpid()}"
    seg = strata.Segment(name, "recreate", (elements * 8 + 4096) * 4 + (4 << 20))
    inp = seg.port("h", "consumer", slots=2, sync=sync)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            pin(0)
            s = strata.Segment(name, "open_only")
            out = s.port("h", "producer", sync=sync)
            bufs = [s.make(np.int64, elements) for _ in range(2)]
            for i in range(iterations):
                buf = bufs[i & 1]
                pace()
                t0 = now()
                buf[0] = t0
                out.send(buf)
            code = 0
        finally:
            os._exit(code)
    pin(1)
    lat = np.empty(iterations, np.int64)
    for i in range(iterations):
        m = inp.recv()
        t1 = now()
        lat[i] = t1 - m.array[0]
        m.release()
    _, status = os.waitpid(pid, 0)
    inp.close()
    seg.close()
    if status != 0:
        raise RuntimeError(f"{sync} producer failed (wait status {status})")
    return lat


def run_baseline(kind: str, iterations: int, elements: int) -> np.ndarray:
    """The same handoff as a port's, written by hand: a ring of 2 slots in shared memory, each naming
    which of 2 payload arrays it carries; the consumer takes that array (views made once, up front)
    and acknowledges, which frees the slot. "spin" publishes by a sequence number the consumer spins
    on, "pipe" also writes one byte to a pipe the consumer blocks in."""
    mem = mmap.mmap(-1, 256 + 2 * elements * 8)  # MAP_SHARED | MAP_ANONYMOUS: shared with the child
    ctrl = np.frombuffer(mem, np.int64, count=32)  # [0] published, [8] acknowledged, [16 + k] slot k's array
    views = [np.frombuffer(mem, np.int64, count=elements, offset=256 + k * elements * 8) for k in range(2)]
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            pin(0)
            for i in range(1, iterations + 1):
                pace()
                t0 = now()
                # Like Port.send: find a free slot, fill it, publish it.
                while i - ctrl[8] > 2:  # both slots still held
                    pass
                k = i & 1
                views[k][0] = t0
                ctrl[16 + k] = k
                ctrl[0] = i
                if kind == "pipe":
                    os.write(w, b"\0")
            code = 0
        finally:
            os._exit(code)
    pin(1)
    lat = np.empty(iterations, np.int64)
    for i in range(1, iterations + 1):
        if kind == "spin":
            while ctrl[0] < i:
                pass
        else:
            os.read(r, 1)
        array = views[ctrl[16 + (i & 1)]]
        t1 = now()
        lat[i - 1] = t1 - array[0]
        ctrl[8] = i
    _, status = os.waitpid(pid, 0)
    os.close(r)
    os.close(w)
    del ctrl, views, array
    mem.close()
    if status != 0:
        raise RuntimeError(f"{kind} producer failed (wait status {status})")
    return lat


def run(method: str, iterations: int, elements: int) -> np.ndarray:
    if method.startswith("py/port/"):
        return run_port(method.removeprefix("py/port/"), iterations, elements)
    return run_baseline(method.removeprefix("py/baseline/"), iterations, elements)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=5000, help="handoffs per run (default 5000)")
    parser.add_argument("--repeats", type=int, default=5, help="runs per method (default 5)")
    parser.add_argument(
        "--elements", type=int, default=512, help="int64 elements of the payload array (default 512)"
    )
    args = parser.parse_args()
    for name, value, least in (
        ("--iterations", args.iterations, 20),
        ("--repeats", args.repeats, 1),
        ("--elements", args.elements, 1),
    ):
        if value < least:
            parser.error(f"{name}={value}: must be at least {least}")
    per_run: dict[str, list[dict[str, float]]] = {m: [] for m in METHODS}
    for _ in range(args.repeats):
        for method in METHODS:
            lat = (
                run(method, args.iterations, args.elements)[args.iterations // 20 :] / 1000.0
            )  # drop warm-up
            per_run[method].append({f"p{p}_us": float(np.percentile(lat, p)) for p in (50, 90, 99)})
    results = []
    for method in METHODS:
        runs = per_run[method]
        row = {"method": method, "elements": args.elements}
        for key in ("p50_us", "p90_us", "p99_us"):
            row[key] = round(statistics.median(r[key] for r in runs), 3)
        row["p50_us_per_repeat"] = [round(r["p50_us"], 3) for r in runs]
        results.append(row)
        print(f"{method:20} p50 {row['p50_us']:8.2f} us  p99 {row['p99_us']:8.2f} us", file=sys.stderr)
    json.dump(
        {
            "iterations": args.iterations,
            "repeats": args.repeats,
            "elements": args.elements,
            "pace_us": PACE_NS / 1000,
            "results": results,
        },
        sys.stdout,
        indent=2,
    )
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
