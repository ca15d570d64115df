# SPDX-License-Identifier: MIT
"""Processes against threads for the same work without strata (bench/shared-objects/proc_vs_threads.sh).

Runs proc_vs_threads (proc_vs_threads.c) for simple(2), pipeline(4) and scatter-gather(6) at 10 MB with the
workflow benchmark's iteration counts, as forked processes, as threads and as threads with process-private
mutexes, --repeats times, every repeat in a fresh random order; checks that every run of a shape read the same
bytes (one checksum); writes results.json and README.md (generated from results.json) to --out.
--report-only regenerates README.md from an existing results.json.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import random
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

MB = 1_000_000
SIZE = 10 * MB
SHAPES = [("simple", 2), ("pipeline", 4), ("scatter-gather", 6)]
# The vehicle is the only difference between the first two; the others give the threads what
# threads.cpp has: process-private mutexes, then also buffers in private memory (what sharing costs).
VARIANTS = {
    "processes": ["--as", "processes"],
    "threads": ["--as", "threads"],
    "threads, private mutexes": ["--as", "threads", "--sync", "private"],
    "threads, private mutexes and memory": ["--as", "threads", "--sync", "private", "--memory", "private"],
}
USAGE_KEYS = ["voluntary_context_switches", "involuntary_context_switches", "minor_faults"]


def run_once(exe: Path, shape: str, tasks: int, variant: str) -> dict:
    cmd = [str(exe), "--shape", shape, "--tasks", str(tasks), "--size", str(SIZE), *VARIANTS[variant]]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}): {done.stdout}{done.stderr}")
    return json.loads(done.stdout)


def summarize(runs: list[dict]) -> tuple[list[dict], list[dict]]:
    """Medians per (shape, variant) and the ratios per shape."""
    rows, ratios = [], []
    for shape, tasks in SHAPES:
        med = {}
        for variant in VARIANTS:
            mine = [r for r in runs if r["shape"] == shape and r["variant"] == variant]
            if not mine:
                continue
            ips = [r["iterations_per_s"] for r in mine]
            row = {
                "shape": shape,
                "tasks": tasks,
                "variant": variant,
                "runs": len(mine),
                "iterations": mine[0]["iterations"],
                "iterations_per_s": statistics.median(ips),
                "iterations_per_s_min": min(ips),
                "iterations_per_s_max": max(ips),
                "seconds": statistics.median(r["seconds"] for r in mine),
                "handoff_p50_ns": statistics.median(r["handoff_p50_ns"] for r in mine),
                "timed": {k: statistics.median(r["timed"][k] for r in mine) for k in USAGE_KEYS},
                "lifetime": {k: statistics.median(r["lifetime"][k] for r in mine) for k in USAGE_KEYS},
            }
            med[variant] = row["iterations_per_s"]
            rows.append(row)
        if "processes" in med and "threads" in med:
            paired = [
                p["iterations_per_s"] / t["iterations_per_s"]
                for p in runs
                for t in runs
                if p["shape"] == t["shape"] == shape
                and p["repeat"] == t["repeat"]
                and (p["variant"], t["variant"]) == ("processes", "threads")
            ]
            ratios.append(
                {
                    "shape": shape,
                    "tasks": tasks,
                    "processes_over_threads": med["processes"] / med["threads"],
                    "processes_over_threads_paired_median": statistics.median(paired),
                    "processes_over_threads_paired_min": min(paired),
                    "processes_over_threads_paired_max": max(paired),
                    "private_mutex_threads_over_threads": med["threads, private mutexes"] / med["threads"],
                    "private_mutex_and_memory_threads_over_threads": med[
                        "threads, private mutexes and memory"
                    ]
                    / med["threads"],
                }
            )
    return rows, ratios


def med(doc: dict, shape: str, variant: str) -> float:
    """The median iterations/s of one configuration in results.json."""
    return next(
        r["iterations_per_s"] for r in doc["summary"] if (r["shape"], r["variant"]) == (shape, variant)
    )


def render(doc: dict) -> str:
    """README.md, every figure taken from results.json."""
    m = doc["machine"]
    lines = [
        "# Processes against threads: the same work without strata (issue 29)",
        "",
        "The limit of the shared-objects benchmark's shm / threads ratio: the workflows' work (per iteration",
        "every task receives each input under its producer's mutex, sums and checks its words, releases it,",
        f"then fills and publishes a {doc['data_size'] / MB:g} MB buffer of its own; 2 slots per producer, a mutex and "
        "two condition",
        "variables per producer, as `src/workflow/threads.cpp`) done by forked processes and by threads of one",
        "process, in one MAP_SHARED region with the same process-shared robust mutexes, so the vehicle is the",
        "only difference. Two more variants give the threads what `threads.cpp` has: its process-private",
        "mutexes, then also buffers in private memory. The program is `bench/shared-objects/proc_vs_threads.c`;",
        "no strata code runs.",
        "",
        "## Command",
        "",
        "```sh",
        "cmake --build --preset default --target bench_shared_objects_proc_vs_threads",
        doc["command"],
        "```",
        "",
        f"Run {doc['date']}, {doc['repeats']} repeats, every repeat in a fresh random order (seed {doc['seed']}),",
        f"{m['cpus']} CPUs, Linux {m['kernel']}, transparent huge pages `{m['thp']}`, "
        f"cpu cgroup `{doc['cpu_cgroup'] or 'none (ran where it was started)'}`,",
        f"load average {doc['load_average_before'][0]:.2f} before and {doc['load_average_after'][0]:.2f} after, "
        f"{doc['seconds']:.0f} s in all.",
        "",
        "## Processes / threads (ratio of medians of iterations/s)",
        "",
        *[
            f"- {r['shape']}({r['tasks']}): processes make {r['processes_over_threads']:.3f}× the threads' "
            f"iterations/s ({med(doc, r['shape'], 'processes'):.1f} against {med(doc, r['shape'], 'threads'):.1f}); "
            f"per repeat, {r['processes_over_threads_paired_median']:.3f}×."
            for r in doc["ratios"]
        ],
        "",
        "| workflow | processes / threads | paired per repeat: median (min–max) "
        "| threads with private mutexes / threads | with private mutexes and memory / threads |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in doc["ratios"]:
        lines.append(
            f"| {r['shape']}({r['tasks']}) | {r['processes_over_threads']:.3f}× "
            f"| {r['processes_over_threads_paired_median']:.3f}× "
            f"({r['processes_over_threads_paired_min']:.3f}–{r['processes_over_threads_paired_max']:.3f}) "
            f"| {r['private_mutex_threads_over_threads']:.3f}× "
            f"| {r['private_mutex_and_memory_threads_over_threads']:.3f}× |"
        )
    lines += [
        "",
        "## Medians per configuration",
        "",
        "Context switches and minor faults: *timed* sums every task's own (`getrusage(RUSAGE_THREAD)`) over",
        "the timed iterations; *lifetime* is the whole program (RUSAGE_SELF plus RUSAGE_CHILDREN).",
        "",
        "| workflow | vehicle | iterations | it/s median (min–max) | s | handoff p50 µs "
        "| timed vol. / invol. cs | timed minor faults | lifetime vol. / invol. cs |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in doc["summary"]:
        t, life = r["timed"], r["lifetime"]
        lines.append(
            f"| {r['shape']}({r['tasks']}) | {r['variant']} | {r['iterations']} "
            f"| {r['iterations_per_s']:.1f} ({r['iterations_per_s_min']:.1f}–{r['iterations_per_s_max']:.1f}) "
            f"| {r['seconds']:.3f} | {r['handoff_p50_ns'] / 1000:.1f} "
            f"| {t['voluntary_context_switches']:.0f} / {t['involuntary_context_switches']:.0f} "
            f"| {t['minor_faults']:.0f} "
            f"| {life['voluntary_context_switches']:.0f} / {life['involuntary_context_switches']:.0f} |"
        )
    lines += [
        "",
        "## Caveats",
        "",
        "- Every run of a shape read the same bytes: one checksum per shape over every vehicle and repeat",
        "  (`checksums` in results.json); the program fails on any checksum error.",
        "- This VM has no hardware performance counters: page-table switches, TLB misses and cache placement",
        "  are not measured, only their sum in the wall time, beside the kernel's software counts above.",
        "- The iteration counts (the table's) are `bench/shared-objects/bench.py`'s for the size, as in strata's",
        "  ratio rerun; strata's own shm / threads ratios are in [../README.md](../README.md).",
        "- Both vehicles' binaries are built with -O3, as `src/workflow/checksum.cpp`, so that the fill and the",
        "  sum are vectorized as in strata's tasks.",
        "- strata's shm method also differs in what this does not reproduce: tasks started by MPICH's launcher",
        "  as separate programs, the segment's ports instead of a mutex per producer.",
        "",
    ]
    return "\n".join(lines)


def thp() -> str:
    try:
        return Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text().strip()
    except OSError:
        return "unknown"


def measure(args: argparse.Namespace) -> dict:
    seed = random.SystemRandom().randrange(1 << 32)
    rng = random.Random(seed)
    start = time.time()
    load_before = os.getloadavg()
    runs: list[dict] = []
    configs = [(shape, tasks, variant) for shape, tasks in SHAPES for variant in VARIANTS]
    for repeat in range(args.repeats):
        order = rng.sample(configs, len(configs))
        for i, (shape, tasks, variant) in enumerate(order):
            r = run_once(args.exe, shape, tasks, variant)
            runs.append({"repeat": repeat, "order": i, "variant": variant, **r})
            print(
                f"  {repeat + 1:>3}/{args.repeats} {shape + f'({tasks})':<18} {variant:<36} "
                f"{r['iterations_per_s']:8.1f} it/s",
                flush=True,
            )
    checksums = {}
    for shape, _ in SHAPES:
        seen = {r["checksum"] for r in runs if r["shape"] == shape}
        if len(seen) != 1:
            raise RuntimeError(f"{shape}: the runs read different bytes: checksums {sorted(seen)}")
        checksums[shape] = seen.pop()
    summary, ratios = summarize(runs)
    return {
        "command": args.command,
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "kernel": platform.release(), "thp": thp()},
        # The cpu cgroup proc_vs_threads.sh made for the run ("" or None: it ran where it was started).
        "cpu_cgroup": os.environ.get("STRATA_BENCH_CPU_CGROUP") or None,
        "repeats": args.repeats,
        "seed": seed,
        "data_size": runs[0]["data_size"],
        "seconds": time.time() - start,
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "checksums": checksums,
        "summary": summary,
        "ratios": ratios,
        "runs": runs,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--exe", type=Path, help="bench_shared_objects_proc_vs_threads")
    ap.add_argument("--repeats", type=int, default=11)
    ap.add_argument("--out", type=Path, required=True, help="directory for results.json and README.md")
    ap.add_argument("--command", default="bench/shared-objects/proc_vs_threads.sh")
    ap.add_argument("--report-only", action="store_true", help="only regenerate README.md from results.json")
    args = ap.parse_args()
    # SIGTERM (proc_vs_threads.sh on a signal) unwinds: subprocess.run kills the running program, whose
    # task processes die with it (PR_SET_PDEATHSIG).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    results = args.out / "results.json"
    if args.report_only:
        doc = json.loads(results.read_text())
    else:
        if args.exe is None:
            ap.error("--exe is needed unless --report-only")
        if args.repeats < 1:
            ap.error(f"--repeats={args.repeats}: expected at least 1")
        doc = measure(args)
        results.write_text(json.dumps(doc, indent=2) + "\n")
    (args.out / "README.md").write_text(render(doc))
    for r in doc["ratios"]:
        print(
            f"{r['shape']}({r['tasks']}): processes / threads {r['processes_over_threads']:.3f}x", flush=True
        )
    print(f"wrote {results} and README.md", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
