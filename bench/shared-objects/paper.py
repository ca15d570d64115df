# SPDX-License-Identifier: MIT
"""Paper 001's Fig. 6 as the paper ran it (bench/shared-objects/run --paper): a long run outside CI.

The suite (bench.py) sweeps the data size with a second of work per point; this runs the figure at the
paper's own scale (issue 30): every size up to 1 GB for every workflow shape, 1,024 and 2,048 iterations,
5 repeats, shm (the paper's Dhmem) against MPI, through the suite's own `strata run` call
(bench.strata_run). In each repeat the methods run back to back in an order that alternates, so that a
drift of the shared machine falls on both; the sizes go from small to large, and results.json is written
after every configuration, so a run cut short keeps what it measured.

A configuration whose buffers do not fit (MemAvailable, and for shm the segment directory's free space,
less 1 GiB) is not started: results.json records it as skipped, with the bytes it needed and had.

`--estimate` runs a short calibration instead (one run per shape and method at each size up to 100 MB,
and the simple workflow at 1 GB) and prints how long the selected plan would take at those rates; it
writes nothing. paper_report.py makes the same estimate for the paper's full spec from a run's own rates.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))
from bench_progress import step  # noqa: E402

from bench import MB, strata_run  # noqa: E402

# Paper 001 (Hobson et al., "Shared-Memory Communication for Containerized Workflows", CCGrid'21), §IV-F
# and Fig. 6 ("Scalability test of Dhmem as data size increases"): throughput on a log-log scale against
# the data a producer sends per iteration, "scaled between 1 MB and 1 GB", for the 3 workflow types, the
# pipeline and the scatter-gather with 9 tasks, Dhmem against MPI. §IV-C: each test runs 1024 and 2048
# iterations, repeated 5 times, averaged; throughput (§IV-A c) is the data transferred between the
# processes / the run's wall time.
# Sizes: the axis ticks are not in the paper's text, so the decades 1 MB .. 1 GB are taken (the suite's).
# Values: the plain-text paper carries Fig. 6's caption but not its plotted points (an image), so no point
# is read off the figure. §IV-F's text gives, from these runs, the maximum iterations/s "across all tests"
# per workflow (max_iterations_per_s, and the ratio as printed), and two claims read from the figure
# (claims, quoted). The machine is §IV-A's.
PAPER_FIG6 = {
    "source": "paper 001 (Dhmem, CCGrid'21), §IV-F and Fig. 6; iterations and repeats from §IV-C",
    "machine": "one node: 16-core Intel Xeon Gold 6130 at 2.10 GHz, 128 GB, Linux 4.15.0, MPICH 3.3.2",
    "shapes": [["simple", 2], ["pipeline", 9], ["scatter-gather", 9]],
    "sizes": [1 * MB, 10 * MB, 100 * MB, 1000 * MB],
    "iterations": [1024, 2048],
    "repeats": 5,
    "methods": ["shm", "mpi"],  # the paper's Dhmem and MPI
    "statistic": "mean",
    "max_iterations_per_s": {
        "simple": {"shm": 1537.3, "mpi": 1726.3, "ratio": 0.89},
        "pipeline": {"shm": 854.5, "mpi": 702.5, "ratio": 1.21},
        "scatter-gather": {"shm": 666.8, "mpi": 360.6, "ratio": 1.85},
    },
    "claims": [
        "Dhmem consistently outperforms MPI for same-node communication",
        "This causes the throughput for each test to stay the same despite sending more data each iteration",
    ],
}
METHODS = ("shm", "mpi", "threads")
WARMUP = 2  # strata run's untimed iterations before the timed ones (docs/workflow.md)
SLOTS = 2  # strata run's slots per producer (docs/workflow.md)
MARGIN = 1 << 30  # left free beside a configuration's buffers
# A run moving less than this is taken to hang (the slowest point of the suite moves ~60 MB/s).
SLOWEST_MB_S = 20
CALIBRATION_BYTES = 1500 * MB  # moved per calibration run (about a second), at least 4 iterations


def edges(shape: str, tasks: int) -> int:
    return {"simple": 1, "pipeline": tasks - 1, "scatter-gather": 2 * (tasks - 2)}[shape]


def producers(shape: str, tasks: int) -> int:
    return 1 if shape == "simple" else tasks - 1


def memory_needed(shape: str, tasks: int, method: str, size: int) -> int:
    """Bytes of data buffers a run holds at once (src/workflow: shm and threads keep SLOTS buffers per
    producer, shm in its segment; MPI one send buffer per producer and one receive buffer per edge)."""
    if method == "mpi":
        return producers(shape, tasks) * size + edges(shape, tasks) * (size + 8)
    if method == "threads":
        return producers(shape, tasks) * SLOTS * size
    slot = 4096 + -(-size // 4096) * 4096
    return producers(shape, tasks) * SLOTS * slot


def free_memory() -> dict[str, int]:
    """MemAvailable and the free space of the segment directory, in bytes."""
    meminfo = Path("/proc/meminfo").read_text()
    available = int(re.search(r"^MemAvailable:\s+(\d+) kB", meminfo, re.M).group(1)) * 1024
    shm_dir = os.environ.get("STRATA_SHM_DIR", "/dev/shm")
    fs = os.statvfs(shm_dir)
    return {
        "mem_available": available,
        "shm_free": fs.f_bavail * fs.f_frsize,
        "shm_dir_size": fs.f_blocks * fs.f_frsize,
    }


def does_not_fit(shape: str, tasks: int, method: str, size: int, free: dict[str, int]) -> str | None:
    """Why the configuration's buffers do not fit now, or None."""
    need = memory_needed(shape, tasks, method, size)
    if need + MARGIN > free["mem_available"]:
        return f"needs {need / 2**30:.1f} GiB of memory, {free['mem_available'] / 2**30:.1f} GiB available"
    if method == "shm" and need + MARGIN > free["shm_free"]:
        return (
            f"needs {need / 2**30:.1f} GiB in the segment directory, {free['shm_free'] / 2**30:.1f} GiB free"
        )
    return None


def parse_size(text: str) -> int:
    """`1MB`, `64KB`, `1GB` (powers of 1000, as strata run reads them), `1MiB` or bytes."""
    units = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30}
    match = re.fullmatch(r"(\d+)\s*([A-Za-z]*)", text.strip())
    if not match or match.group(2).upper() not in units:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a size such as 64KB, 1MB or 1GB")
    size = int(match.group(1)) * units[match.group(2).upper()]
    if size <= 0 or size % 8:
        raise argparse.ArgumentTypeError(f"{text!r}: a size is a positive multiple of 8 bytes")
    return size


def plan(sizes, iterations, methods) -> list[dict]:
    """Every configuration in run order: small sizes first, then shape, then iterations."""
    return [
        {"shape": shape, "tasks": tasks, "size": size, "iterations": its, "methods": list(methods)}
        for size in sizes
        for shape, tasks in PAPER_FIG6["shapes"]
        for its in iterations
    ]


def rate_at(rates: dict, shape: str, method: str, size: int) -> float | None:
    """Iterations/s of (shape, method) at `size`: measured, else from the nearest measured size below it
    (else above) at the same MB/s, as the paper's curves flatten with size."""
    measured = sorted(s for (sh, m, s) in rates if sh == shape and m == method)
    if not measured:
        return None
    below = [s for s in measured if s <= size]
    ref = below[-1] if below else measured[0]
    return rates[(shape, method, ref)] * ref / size


def estimate_s(configs: list[dict], repeats: int, rates: dict, launch_s: dict) -> float:
    """Seconds the configurations' runs take at `rates` (iterations/s by shape, method, size), each run
    its iterations and warmup plus its launch (`launch_s` by shape, method)."""
    total = 0.0
    for c in configs:
        for method in c["methods"]:
            rate = rate_at(rates, c["shape"], method, c["size"])
            if rate is None:
                raise ValueError(f"no rate measured for {c['shape']} {method}")
            run = launch_s.get((c["shape"], method), 0.0) + (c["iterations"] + WARMUP) / rate
            total += repeats * run
    return total


def rates_of(runs: list[dict]) -> tuple[dict, dict]:
    """(iterations/s by shape, method, size; launch seconds by shape, method): medians of `runs`."""
    rates, launch = {}, {}
    for key in {(r["shape"], r["method"], r["data_size"]) for r in runs}:
        rates[key] = statistics.median(
            r["iterations_per_s"] for r in runs if (r["shape"], r["method"], r["data_size"]) == key
        )
    for key in {(r["shape"], r["method"]) for r in runs}:
        launch[key] = max(
            0.0,
            statistics.median(
                r["process_s"] - (r["iterations"] + WARMUP) / r["iterations_per_s"]
                for r in runs
                if (r["shape"], r["method"]) == key
            ),
        )
    return rates, launch


def one_run(bin_dir: Path, shape: str, tasks: int, method: str, size: int, iterations: int) -> dict:
    """One `strata run` through the suite's code path, with its wall time as a process."""
    moved = (iterations + WARMUP) * edges(shape, tasks) * size
    started = time.monotonic()
    report = strata_run(
        bin_dir, shape, tasks, method, size, iterations, timeout=600 + moved / (SLOWEST_MB_S * MB)
    )
    return {
        "shape": shape,
        "tasks": tasks,
        "method": method,
        "data_size": size,
        "iterations": iterations,
        "throughput_mb_s": report["throughput_mb_s"],
        "iterations_per_s": report["iterations_per_s"],
        "seconds": report["seconds"],
        "process_s": time.monotonic() - started,
    }


def calibrate(bin_dir: Path, sizes, methods) -> list[dict]:
    """One short run per shape and method at each size up to 100 MB, and the simple workflow at 1 GB (the
    9-task workflows hold 15-21 GiB there: extrapolated from 100 MB instead). A run that fails is left
    out (the estimate then takes the size below)."""
    points = [(shape, tasks, s) for s in sizes if s <= 100 * MB for shape, tasks in PAPER_FIG6["shapes"]]
    points += [("simple", 2, s) for s in sizes if s > 100 * MB]
    runs = []
    for i, (shape, tasks, size) in enumerate(points):
        for method in methods:
            its = max(4, min(64, CALIBRATION_BYTES // (size * edges(shape, tasks))))
            what = f"{shape}({tasks}) {method} {size / MB:g} MB x {its}"
            step(i + 1, len(points), f"calibrating {what}")
            try:
                r = one_run(bin_dir, shape, tasks, method, size, its)
            except (RuntimeError, subprocess.TimeoutExpired) as failure:
                print(f"  {what}: FAILED: {' '.join(str(failure).split())[:400]}", flush=True)
                continue
            runs.append(r)
            print(
                f"  {what}: {r['iterations_per_s']:8.1f} it/s {r['throughput_mb_s']:8.0f} MB/s, "
                f"{r['process_s']:.1f} s",
                flush=True,
            )
    return runs


def print_estimate(configs: list[dict], repeats: int, runs: list[dict]) -> None:
    """The plan's duration at the rates of `runs`, in all and by size, iterations, shape and method."""
    rates, launch = rates_of(runs)

    def hours(part: list[dict]) -> float:
        return estimate_s(part, repeats, rates, launch) / 3600

    print(f"\nestimated: {hours(configs):.1f} h for {len(configs)} configurations x {repeats} repeats")
    for size in sorted({c["size"] for c in configs}):
        print(f"  size {size / MB:g} MB: {hours([c for c in configs if c['size'] == size]):.2f} h")
    for its in sorted({c["iterations"] for c in configs}):
        print(f"  {its} iterations: {hours([c for c in configs if c['iterations'] == its]):.2f} h")
    for shape, _ in PAPER_FIG6["shapes"]:
        print(f"  {shape}: {hours([c for c in configs if c['shape'] == shape]):.2f} h")
    for method in configs[0]["methods"]:
        print(f"  {method}: {hours([dict(c, methods=[method]) for c in configs]):.2f} h", flush=True)


def run_plan(bin_dir: Path, configs: list[dict], repeats: int, write) -> tuple[list, list, list]:
    """(runs, skipped, failures) of every configuration; write(runs, skipped, failures, done) after each."""
    runs, skipped, failures = [], [], []
    total = sum(len(c["methods"]) for c in configs) * repeats
    count = 0
    for c in configs:
        shape, tasks, size, its = c["shape"], c["tasks"], c["size"], c["iterations"]
        for repeat in range(repeats):
            turn = repeat % len(c["methods"])
            for method in c["methods"][turn:] + c["methods"][:turn]:
                count += 1
                what = f"{shape}({tasks}) {method} {size / MB:g} MB x {its} #{repeat + 1}"
                step(count, total, what)
                free = free_memory()
                why = does_not_fit(shape, tasks, method, size, free)
                if why:
                    print(f"  {what}: skipped, {why}", flush=True)
                    skipped.append(
                        {
                            "shape": shape,
                            "tasks": tasks,
                            "method": method,
                            "data_size": size,
                            "iterations": its,
                        }
                        | {
                            "repeat": repeat,
                            "reason": why,
                            "needed_bytes": memory_needed(shape, tasks, method, size),
                        }
                        | free
                    )
                    continue
                try:
                    r = one_run(bin_dir, shape, tasks, method, size, its)
                except (RuntimeError, subprocess.TimeoutExpired) as failure:
                    print(f"  {what}: FAILED: {str(failure)[:500]}", flush=True)
                    failures.append(
                        {
                            "shape": shape,
                            "tasks": tasks,
                            "method": method,
                            "data_size": size,
                            "iterations": its,
                        }
                        | {"repeat": repeat, "error": str(failure)[:2000]}
                    )
                    continue
                runs.append(r | {"repeat": repeat})
                print(
                    f"  {what}: {r['throughput_mb_s']:9.1f} MB/s {r['iterations_per_s']:8.1f} it/s "
                    f"({r['process_s']:.0f} s)",
                    flush=True,
                )
        write(runs, skipped, failures, False)
    return runs, skipped, failures


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin-dir", type=Path, required=True)
    ap.add_argument("--out", type=Path, help="results.json to write (not with --estimate)")
    ap.add_argument("--repeats", type=int, default=PAPER_FIG6["repeats"])
    ap.add_argument("--sizes", default="", help="comma-separated, e.g. 1MB,10MB (default: the paper's)")
    ap.add_argument("--iterations", default="", help="comma-separated (default: the paper's 1024,2048)")
    ap.add_argument("--methods", default=",".join(PAPER_FIG6["methods"]), help="of shm, mpi, threads")
    ap.add_argument("--estimate", action="store_true", help="calibrate and print the plan's duration only")
    args = ap.parse_args()
    try:
        args.sizes = [parse_size(s) for s in args.sizes.split(",")] if args.sizes else PAPER_FIG6["sizes"]
        args.iterations = (
            [int(i) for i in args.iterations.split(",")] if args.iterations else PAPER_FIG6["iterations"]
        )
    except (argparse.ArgumentTypeError, ValueError) as bad:
        ap.error(f"--sizes / --iterations: {bad}")
    args.methods = args.methods.split(",")
    if any(m not in METHODS for m in args.methods) or not args.methods:
        ap.error(f"--methods {','.join(args.methods)}: expected some of {', '.join(METHODS)}")
    if any(i < 1 for i in args.iterations) or args.repeats < 1:
        ap.error("--iterations and --repeats are positive")
    if not args.estimate and args.out is None:
        ap.error("--out is needed (unless --estimate)")
    return args


def main() -> int:
    args = parse_args()
    configs = plan(args.sizes, args.iterations, args.methods)
    if args.estimate:
        print("calibration: one short run per shape and method", flush=True)
        print_estimate(configs, args.repeats, calibrate(args.bin_dir, args.sizes, args.methods))
        return 0
    started = time.time()
    load_at_start = os.getloadavg()
    free_at_start = free_memory()
    doc = {
        "suite": "shared-objects-paper",
        "command": os.environ.get("STRATA_BENCH_COMMAND", "bench/shared-objects/run --paper"),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": {
            "cpus": os.cpu_count(),
            "kernel": platform.release(),
            "memory_bytes": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"),
            "at_start": free_at_start,
        },
        "paper": PAPER_FIG6,
        "settings": {
            "sizes": args.sizes,
            "iterations": args.iterations,
            "repeats": args.repeats,
            "methods": args.methods,
            "warmup": WARMUP,
            "slots": SLOTS,
            "memory_margin_bytes": MARGIN,
        },
        "configurations": configs,
    }

    def write(runs, skipped, failures, complete):
        doc.update(
            complete=complete,
            seconds=time.time() - started,
            load_average={"start": list(load_at_start), "now": list(os.getloadavg())},
            runs=runs,
            skipped=skipped,
            failures=failures,
        )
        args.out.write_text(json.dumps(doc, indent=1) + "\n")

    runs, skipped, failures = run_plan(args.bin_dir, configs, args.repeats, write)
    write(runs, skipped, failures, True)
    print(f"wrote {args.out} in {doc['seconds']:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
