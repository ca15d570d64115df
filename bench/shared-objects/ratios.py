# SPDX-License-Identifier: MIT
"""Reruns the shm / MPI and shm / threads ratios against a baseline shown to be sane (bench/shared-objects/run --ratios).

1. MPI's own point-to-point bandwidth between two ranks on this node (bench_shared_objects_mpi_p2p,
   10 MB messages) under each MPICH transport setting below, interleaved, --repeats runs each.
2. The setting with the highest median bandwidth is MPI's best intra-node path here; the 10 MB workflows
   (simple(2), pipeline(4), scatter-gather(6)) then run with shm, threads, MPI with its default settings and
   MPI with that best setting, every repeat in a fresh random order.
3. The handoff microbenchmark (bench_shared_objects_handoff) --repeats times: its 100 MB rows now have a
   same-work baseline (the same two processes, slots, fill and verify, without strata).
Writes the result into results.json under "ratios_rerun" and keeps everything else of the file.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))
from bench_progress import step  # noqa: E402  (bench/bench_progress.py: `strata bench`'s progress line)

from bench import MB, iterations_for  # noqa: E402

# MPICH 4.0.2 (Debian, ch4:ucx): the intra-node settings that can change its path. The default sends
# between two ranks of a node through the ch4 POSIX shared-memory queue (64 KiB cells, copy in + copy
# out); MPIR_CVAR_NOLOCAL=1 sends them through UCX instead, whose shared-memory transports include
# single-copy CMA (process_vm_readv) for large messages; larger queue cells cut the number of handoffs;
# MPIR_CVAR_POLLS_BEFORE_YIELD=1 yields the core at every poll instead of busy-polling, which matters
# when two busy-polling ranks share 2 cores with other work.
TRANSPORTS = {
    "default": {},
    "ucx (MPIR_CVAR_NOLOCAL=1)": {"MPIR_CVAR_NOLOCAL": "1"},
    "posix, 1 MiB cells": {"MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE": "1048576"},
    "posix, yield every poll": {"MPIR_CVAR_POLLS_BEFORE_YIELD": "1"},
    "ucx, yield every poll": {"MPIR_CVAR_NOLOCAL": "1", "MPIR_CVAR_POLLS_BEFORE_YIELD": "1"},
}
SHAPES = [("simple", 2), ("pipeline", 4), ("scatter-gather", 6)]


def memcpy_mb_s(size: int = 10 * MB, repeats: int = 21) -> float:
    """One thread copying 10 MB between two warm buffers (numpy.copyto is a memcpy): the scale for p2p."""
    import numpy as np

    a, b = np.ones(size, dtype=np.uint8), np.zeros(size, dtype=np.uint8)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        np.copyto(b, a)
        times.append(time.perf_counter() - t0)
    return size / statistics.median(times) / 1e6


def p2p(bin_dir: Path, env: dict[str, str]) -> float:
    cmd = ["mpiexec", "-n", "2", str(bin_dir / "bench_shared_objects_mpi_p2p"), "--bytes", str(10 * MB)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env={**os.environ, **env})
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} with {env} failed: {done.stdout}{done.stderr}")
    return json.loads(done.stdout)["mb_s"]


def workflow(bin_dir: Path, shape: str, tasks: int, method: str, env: dict[str, str]) -> dict:
    cmd = [
        str(bin_dir / "strata"),
        "run",
        "--json",
        "--shape",
        shape,
        "--tasks",
        str(tasks),
        "--method",
        method,
    ]
    cmd += ["--data-size", str(10 * MB), "--iterations", str(iterations_for(10 * MB, tasks, False))]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env={**os.environ, **env})
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {done.stdout}{done.stderr}")
    report = json.loads(done.stdout)
    if report["checksum_errors"] != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {report['checksum_errors']} checksum errors")
    return {"throughput_mb_s": report["throughput_mb_s"], "iterations_per_s": report["iterations_per_s"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin-dir", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True, help="results.json to update")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    start = time.time()
    load_before = os.getloadavg()
    bandwidth: dict[str, list[float]] = {name: [] for name in TRANSPORTS}
    memcpy: list[float] = []
    for repeat in range(args.repeats):
        memcpy.append(memcpy_mb_s())
        for i, name in enumerate(random.sample(list(TRANSPORTS), len(TRANSPORTS))):
            step(
                repeat * len(TRANSPORTS) + i + 1,
                args.repeats * len(TRANSPORTS),
                f"MPI point-to-point: {name}",
            )
            bandwidth[name].append(p2p(args.bin_dir, TRANSPORTS[name]))
            print(f"  p2p {name:<28} {bandwidth[name][-1]:8.0f} MB/s", flush=True)
    best = max(TRANSPORTS, key=lambda name: statistics.median(bandwidth[name]))
    variants = [("shm", "shm", {}), ("threads", "threads", {}), ("mpi (default)", "mpi", {})]
    if best != "default":
        variants.append((f"mpi ({best})", "mpi", TRANSPORTS[best]))
    runs: list[dict] = []
    for repeat in range(args.repeats):
        order = [(shape, n, v) for shape, n in SHAPES for v in variants]
        random.shuffle(order)
        for i, (shape, n, (label, method, env)) in enumerate(order):
            step(repeat * len(order) + i + 1, args.repeats * len(order), f"workflow: {shape}({n}) {label}")
            r = workflow(args.bin_dir, shape, n, method, env)
            runs.append({"repeat": repeat, "shape": shape, "tasks": n, "variant": label, **r})
            print(f"  {shape:<15} {label:<32} {r['iterations_per_s']:8.1f} it/s", flush=True)
    handoff = []
    for repeat in range(args.repeats):
        step(repeat + 1, args.repeats, "handoff: 100 MB through raw slots and a port")
        done = subprocess.run(
            [str(args.bin_dir / "bench_shared_objects_handoff")],
            capture_output=True,
            text=True,
            timeout=900,
            check=True,
        )
        handoff.append(json.loads(done.stdout))
        t = {e["wait"]: e["raw_slots_over_this"] for e in handoff[-1]["throughput"]}
        print(f"  handoff 100 MB: raw slots / port {t}", flush=True)
    doc = json.loads(args.out.read_text())
    doc["ratios_rerun"] = {
        "command": os.environ.get("STRATA_BENCH_COMMAND", "bench/shared-objects/run --ratios"),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "repeats": args.repeats,
        "seconds": time.time() - start,
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "transports": TRANSPORTS,
        "p2p_mb_s": bandwidth,
        "memcpy_10MB_mb_s": memcpy,
        "best_transport": best,
        # The cpu cgroup bench/shared-objects/run made for the rerun (None: it ran where it was started, under
        # autogroup, which weighs the threads method's one session against one session per shm/MPI task).
        "cpu_cgroup": os.environ.get("STRATA_BENCH_CPU_CGROUP"),
        "runs": runs,
        "handoff": handoff,
    }
    args.out.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"wrote {args.out} in {time.time() - start:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
