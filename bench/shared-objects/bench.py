# SPDX-License-Identifier: MIT
"""Runs the shared-objects benchmark and writes results.json (bench/shared-objects/run).

Every configuration is one `strata run --shape ... --json` (a fresh mpiexec
job, or one process for threads), repeated; the report takes medians.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench_progress import step  # noqa: E402  (bench/bench_progress.py: `strata bench`'s progress line)

MB = 1_000_000


def strata_run(
    bin_dir: Path,
    shape: str,
    tasks: int,
    method: str,
    size: int,
    iterations: int,
    wait: str = "blocking",
    timeout: float = 900,
) -> dict:
    """One `strata run --json` (its report); fails on a non-zero exit, a checksum error or `timeout` s."""
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
        "--data-size",
        str(size),
        "--iterations",
        str(iterations),
        "--wait",
        wait,
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {done.stdout}{done.stderr}")
    report = json.loads(done.stdout)
    if report["checksum_errors"] != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {report['checksum_errors']} checksum errors")
    return report


def iterations_for(size: int, tasks: int, quick: bool) -> int:
    """Enough iterations for about a second of work, fewer for big data and many tasks."""
    budget = (1_500 if quick else 3_000) * MB
    n = int(budget / (size * max(1, tasks - 1)))
    return max(4 if quick else 8, min(n, 60 if quick else 200))


def measure(bin_dir, rows, experiment, shape, tasks, method, size, repeats, quick, wait="blocking"):
    iterations = iterations_for(size, tasks, quick)
    runs = []
    for _ in range(repeats):
        r = strata_run(bin_dir, shape, tasks, method, size, iterations, wait)
        runs.append(r)
    med = lambda key: statistics.median(r[key] for r in runs)  # noqa: E731
    p50 = statistics.median(statistics.median(e["p50_ns"] for e in r["edges"]) for r in runs)
    row = {
        "experiment": experiment,
        "shape": shape,
        "tasks": tasks,
        "method": method,
        "wait": wait,
        "data_size": size,
        "iterations": iterations,
        "repeats": repeats,
        "throughput_mb_s": med("throughput_mb_s"),
        "iterations_per_s": med("iterations_per_s"),
        "seconds": med("seconds"),
        "handoff_p50_ns": p50,
        "all_throughput_mb_s": [r["throughput_mb_s"] for r in runs],
    }
    rows.append(row)
    print(
        f"  {experiment:<10} {shape:<15} n={tasks:<3} {method:<10} {size / MB:>7.0f} MB  "
        f"{row['throughput_mb_s']:9.1f} MB/s {row['iterations_per_s']:8.1f} it/s",
        flush=True,
    )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin-dir", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    quick = args.quick
    repeats = 1 if quick else args.repeats
    rows: list[dict] = []
    start = time.time()
    shapes = [("simple", 2), ("pipeline", 4), ("scatter-gather", 6)]

    widths = [3, 6, 10] if quick else [3, 4, 6, 10, 18, 34]
    sizes = [1 * MB, 10 * MB, 100 * MB] if quick else [1 * MB, 10 * MB, 100 * MB, 1000 * MB]
    # (title, [(experiment, shape, tasks, method, size, repeats)]): every workflow run, counted first
    # for the progress line.
    groups = [
        (
            "workflow types and copy variants at 10 MB (Figs. 3, 4; iterations/s)",
            [
                ("types", shape, n, method, 10 * MB, repeats)
                for shape, n in shapes
                for method in ["shm", "copy-into", "copy-from", "copy", "mpi", "threads"]
            ],
        ),
        (
            "workflow size 3..34 tasks at 10 MB (Fig. 5)",
            [
                ("scaling", shape, n, method, 10 * MB, max(1, repeats - 2))
                for shape in ["pipeline", "scatter-gather"]
                for n in widths
                for method in ["shm", "mpi", "threads"]
            ],
        ),
        (
            "data size 1 MB..1 GB, pipeline and scatter-gather of 9 tasks (Fig. 6)",
            [
                ("sizes", shape, n, method, size, max(1, repeats - 2))
                for size in sizes
                for shape, n in [("simple", 2), ("pipeline", 9), ("scatter-gather", 9)]
                # 9 tasks x 2 slots x 1 GB does not fit next to the other builds on this machine
                if size < 1000 * MB or shape == "simple"
                for method in ["shm", "mpi", "threads"]
            ],
        ),
    ]
    total = sum(len(configs) for _, configs in groups) + 1
    done = 0
    for title, configs in groups:
        print(title, flush=True)
        for experiment, shape, n, method, size, runs in configs:
            done += 1
            step(done, total, f"{experiment}: {shape}({n}) {method} {size // MB} MB")
            measure(args.bin_dir, rows, experiment, shape, n, method, size, runs, quick)

    print("handoff latency and 100 MB touched throughput (microbenchmark)", flush=True)
    step(total, total, "handoff latency and 100 MB throughput")
    handoff_runs = []
    for _ in range(1 if quick else 3):
        done = subprocess.run(
            [str(args.bin_dir / "bench_shared_objects_handoff")] + (["--quick"] if quick else []),
            capture_output=True,
            text=True,
            timeout=600,
            check=True,
        )
        handoff_runs.append(json.loads(done.stdout))

    doc = {
        "command": os.environ.get(
            "STRATA_BENCH_COMMAND", "bench/shared-objects/run " + " ".join(sys.argv[1:])
        ),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": {
            "cpus": os.cpu_count(),
            "kernel": platform.release(),
            "load_average_at_end": os.getloadavg(),
        },
        "quick": quick,
        "repeats": repeats,
        "seconds": time.time() - start,
        "workflows": rows,
        "handoff": handoff_runs,
    }
    args.out.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"wrote {args.out} in {doc['seconds']:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
