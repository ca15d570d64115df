# SPDX-License-Identifier: MIT
"""Turns results.json of bench/shared-objects/run into results.md and fig*.png, and writes the verdicts
of the targets in DEFINITIONS into results.json's "targets" (bench/target_rows.py)."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))
import placement_report  # noqa: E402
import ratios_report  # noqa: E402
from report_plots import save_png  # noqa: E402
from target_rows import Definition, row  # noqa: E402

TYPES = "workflow types at 10 MB, iterations/s (ratio rerun, medians of its repeats)"
FIG3 = "001 Fig. 3: Dhmem / MPI "
RATIO_RULE = "against the faster of MPICH's default and best point-to-point setting, on the ratio rerun"
HANDOFF = "handoff between two processes in the workflow microbenchmark, payload untouched"
TOUCHED = "100 MB handed over and touched, the same work without strata / strata throughput"
MEMCPY = "memcpy of 100 MB / strata's touched 100 MB handoff throughput"
DEFINITIONS = {
    "shm-mpi-simple": Definition(TYPES, FIG3 + "0.89×", f"simple: shm ≥ 1.5× MPI, {RATIO_RULE}", "aea465b"),
    "shm-mpi-pipeline": Definition(
        TYPES, FIG3 + "1.21×", f"pipeline(4): shm ≥ 2× MPI, {RATIO_RULE}", "aea465b"
    ),
    "shm-mpi-scatter-gather": Definition(
        TYPES, FIG3 + "1.85×", f"scatter-gather(6): shm ≥ 3× MPI, {RATIO_RULE}", "aea465b", headline=True
    ),
    "shm-threads": Definition(
        TYPES,
        "001 Fig. 5: threads, the paper's target for Dhmem",
        "scatter-gather(6): shm ≥ 1× the threads method, judged only on a ratio rerun inside a cpu cgroup of "
        "its own",
        "5d1ba51",
        headline=True,
    ),
    "handoff-busy-poll": Definition(HANDOFF, "—", "busy-poll p50 ≤ 2 µs", "5758151"),
    "handoff-blocking": Definition(HANDOFF, "—", "blocking p50 ≤ 15 µs", "5758151"),
    "same-work-busy-poll": Definition(TOUCHED, "—", "busy-poll: ≤ 1.3", "8c69da0"),
    "same-work-blocking": Definition(TOUCHED, "—", "blocking: ≤ 1.3", "8c69da0"),
    "memcpy-busy-poll": Definition(
        MEMCPY, "—", "busy-poll: ≤ 1.3", "5758151", superseded_by="same-work-busy-poll"
    ),
    "memcpy-blocking": Definition(
        MEMCPY, "—", "blocking: ≤ 1.3", "5758151", superseded_by="same-work-blocking"
    ),
}
VERDICTS = {"yes": True, "**no**": False}  # any other verdict text: not established

MB = 1_000_000
COLORS = {
    "shm": "tab:blue",
    "copy-into": "tab:cyan",
    "copy-from": "tab:green",
    "copy": "tab:olive",
    "mpi": "tab:red",
    "threads": "tab:gray",
}


def pick(rows, **match):
    return [r for r in rows if all(r[k] == v for k, v in match.items())]


def one(rows, **match):
    found = pick(rows, **match)
    return found[0] if found else None


def bars(ax, rows, shapes, methods, title):
    width = 0.8 / len(methods)
    for i, m in enumerate(methods):
        ys = [(one(rows, shape=s, tasks=n, method=m) or {}).get("throughput_mb_s", 0) for s, n in shapes]
        ax.bar([x + i * width for x in range(len(shapes))], ys, width, label=m, color=COLORS[m])
    ax.set_xticks(
        [x + width * (len(methods) - 1) / 2 for x in range(len(shapes))],
        [f"{s}({n})" if s != "simple" else s for s, n in shapes],
    )
    ax.set_ylabel("throughput (MB/s)")
    ax.set_title(title)
    ax.legend(fontsize=8)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("results", type=Path)
    ap.add_argument("--out-dir", type=Path, required=True)
    args = ap.parse_args()
    doc = json.loads(args.results.read_text())
    rows = doc["workflows"]
    out = args.out_dir
    types = pick(rows, experiment="types")
    shapes = sorted({(r["shape"], r["tasks"]) for r in types}, key=lambda s: s[1])

    fig, ax = plt.subplots(figsize=(7, 4))
    bars(ax, types, shapes, ["shm", "mpi", "threads"], "Throughput vs workflow type, 10 MB (paper Fig. 3)")
    fig.tight_layout()
    save_png(fig, out / "fig3_types.png", dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(8, 4))
    bars(
        ax,
        types,
        shapes,
        ["shm", "copy-into", "copy-from", "copy", "mpi"],
        "Copying at the boundaries, 10 MB (paper Fig. 4)",
    )
    fig.tight_layout()
    save_png(fig, out / "fig4_copy.png", dpi=110)
    plt.close(fig)

    scaling = pick(rows, experiment="scaling")
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, shape in zip(axes, ["pipeline", "scatter-gather"]):
        for m in ["shm", "mpi", "threads"]:
            pts = sorted((r["tasks"], r["throughput_mb_s"]) for r in pick(scaling, shape=shape, method=m))
            if pts:
                ax.plot(*zip(*pts), marker="o", label=m, color=COLORS[m])
        ax.axvline(3 if shape == "pipeline" else 4, color="k", ls=":", lw=0.8)
        ax.set_xlabel("tasks (2 cores: oversubscribed right of the dotted line)")
        ax.set_ylabel("throughput (MB/s)")
        ax.set_title(f"{shape}, 10 MB (paper Fig. 5)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    save_png(fig, out / "fig5_scaling.png", dpi=110)
    plt.close(fig)

    sizes = pick(rows, experiment="sizes")
    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    for ax, (shape, n) in zip(axes, [("simple", 2), ("pipeline", 9), ("scatter-gather", 9)]):
        for m in ["shm", "mpi", "threads"]:
            pts = sorted(
                (r["data_size"] / MB, r["throughput_mb_s"]) for r in pick(sizes, shape=shape, method=m)
            )
            if pts:
                ax.plot(*zip(*pts), marker="o", label=m, color=COLORS[m])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("data size (MB)")
        ax.set_ylabel("throughput (MB/s)")
        ax.set_title(f"{shape}({n})" if shape != "simple" else "simple")
        ax.legend(fontsize=8)
    fig.suptitle("Throughput vs data size (paper Fig. 6)")
    fig.tight_layout()
    save_png(fig, out / "fig6_sizes.png", dpi=110)
    plt.close(fig)

    # Targets.
    def ratio(shape, n, a, b):
        ra, rb = one(types, shape=shape, tasks=n, method=a), one(types, shape=shape, tasks=n, method=b)
        return (ra["iterations_per_s"] / rb["iterations_per_s"]) if ra and rb else float("nan")

    rerun = doc.get("ratios_rerun")
    # The rerun's handoff runs (with the same-work baseline) replace the first run's when present.
    handoff_runs = rerun["handoff"] if rerun and rerun.get("handoff") else doc["handoff"]
    same_work = all("raw_slots_over_this" in e for r in handoff_runs for e in r["throughput"])
    baseline_key = "raw_slots_over_this" if same_work else "memcpy_over_this"
    baseline_name = "same work without strata" if same_work else "memcpy"
    lat = {}
    for run in handoff_runs:
        for e in run["latency"]:
            lat.setdefault((e["wait"], e["payload"]), []).append(e["p50_ns"])
    thr = {}
    for run in handoff_runs:
        for e in run["throughput"]:
            thr.setdefault(e["wait"], []).append(e[baseline_key])
    memcpy = statistics.median(r["memcpy_100MB_mb_s"] for r in handoff_runs)
    sg = next((n for s, n in shapes if s == "scatter-gather"), 0)
    pl = next((n for s, n in shapes if s == "pipeline"), 0)
    judged_ratio = ratio
    if rerun:
        # The ratios are judged on the rerun, against the faster of MPI's default and best p2p setting.
        def judged_ratio(shape, n, a, b):
            return ratios_report.ratio(rerun, shape, a, b)

    targets = [
        (
            "shm / MPI iterations/s, simple, 10 MB",
            judged_ratio("simple", 2, "shm", "mpi"),
            ">= 1.5",
            1.5,
            True,
        ),
        (
            f"shm / MPI iterations/s, pipeline({pl}), 10 MB",
            judged_ratio("pipeline", pl, "shm", "mpi"),
            ">= 2",
            2.0,
            True,
        ),
        (
            f"shm / MPI iterations/s, scatter-gather({sg}), 10 MB",
            judged_ratio("scatter-gather", sg, "shm", "mpi"),
            ">= 3",
            3.0,
            True,
        ),
        (
            f"shm / threads iterations/s, scatter-gather({sg}), 10 MB",
            judged_ratio("scatter-gather", sg, "shm", "threads"),
            ">= 1",
            1.0,
            True,
        ),
        (
            "handoff p50, busy-poll, payload untouched (µs)",
            statistics.median(lat[("busy-poll", "untouched")]) / 1e3,
            "<= 2",
            2.0,
            False,
        ),
        (
            "handoff p50, blocking, payload untouched (µs)",
            statistics.median(lat[("blocking", "untouched")]) / 1e3,
            "<= 15",
            15.0,
            False,
        ),
        (
            f"{baseline_name} / touched 100 MB handoff throughput, busy-poll",
            statistics.median(thr["busy-poll"]),
            "<= 1.3",
            1.3,
            False,
        ),
        (
            f"{baseline_name} / touched 100 MB handoff throughput, blocking",
            statistics.median(thr["blocking"]),
            "<= 1.3",
            1.3,
            False,
        ),
    ]

    md = ["# Shared objects: the synthetic workflow benchmark (Dhmem paper §IV)", ""]
    md += [
        f"Command: `{doc['command']}`  ",
        f"Date: {doc['date']}, {doc['seconds']:.0f} s, "
        f"{doc['repeats']} repeat(s) per configuration (medians; the scaling and size sweeps run each point repeats - 2 times, at least once).  ",
        f"Machine: {doc['machine']['cpus']} CPUs, Linux {doc['machine']['kernel']}, load average at the end "
        f"{', '.join(f'{x:.1f}' for x in doc['machine']['load_average_at_end'])}.",
        "",
        "**Noise:** this machine has 2 cores shared with other builds and tests running at the same time, so "
        "absolute numbers move by tens of percent between runs; ratios are taken between configurations "
        "measured in the same run. **Oversubscription:** with 2 cores, any workflow with more than 2 busy "
        "tasks (pipeline beyond 3 tasks, scatter-gather beyond 4, every 9-task and 34-task run) time-shares "
        "the cores, so those points measure scheduling as much as data sharing.",
        "",
        "Each iteration every producer writes all its data and every consumer reads all of it and checks a "
        "checksum (no run had a checksum error). Throughput is the paper's metric: bytes handed over along "
        "all edges / wall time. MPI is MPICH over its shared-memory transport, one rank per task; threads "
        "is one process with mutex/condition-variable handoff; shm is the shm layer: one strata::Segment per "
        "run and one strata::Port per producer whose slots hold the data (blocking waits, the default of "
        "`strata run`). Reproduce one point with e.g. `strata run --shape scatter-gather --tasks 6 --method "
        "shm --data-size 10MB --iterations 100`.",
        "",
        "**Reading the results.** MPI is far slower here than in the paper (shm/MPI 4-7x instead of "
        "0.9-1.9x): every MPI handoff copies the data twice through MPICH's shared-memory queues while both "
        "ranks busy-poll, and on 2 loaded cores the polling rank competes with the copying one (MPI at 1 MB "
        "makes only ~60 iterations/s for the same reason). Shm against threads is judged only on a rerun "
        "made in a cpu cgroup of its own: outside one, Linux's autogroup gives each session one share of a "
        "loaded machine, and MPICH's launcher puts each shm task in its own session while the threads share "
        "one (see README.md).",
        "",
        "## Targets",
        "",
        "| target | measured | goal | met |",
        "|---|---|---|---|",
    ]
    baseline_id = "same-work" if same_work else "memcpy"
    ids = ["shm-mpi-simple", "shm-mpi-pipeline", "shm-mpi-scatter-gather", "shm-threads"]
    ids += ["handoff-busy-poll", "handoff-blocking", f"{baseline_id}-busy-poll", f"{baseline_id}-blocking"]
    rows_out = []
    for (name, value, goal, limit, higher), id in zip(targets, ids, strict=True):
        met = value >= limit if higher else value <= limit
        verdict = "yes" if met else "**no**"
        if name.startswith("shm / MPI") and not rerun:
            verdict = "**not established**: no MPI point-to-point baseline measured beside it"
        elif name.startswith("shm / threads"):
            verdict = ratios_report.threads_verdict(rerun, met)
        elif name.startswith("memcpy /"):  # the old baseline: no verdict on it
            verdict = f"**{ratios_report.NOT_PHYSICAL}**"
        md.append(f"| {name} | {value:.2f} | {goal} | {verdict} |")
        measured = f"{value:.2f} µs" if "(µs)" in name else f"{value:.2f}×"
        rows_out.append(row(DEFINITIONS, id, measured, VERDICTS.get(verdict)))
    placement_md, placement_targets = placement_report.section(doc)
    for target in placement_targets:
        md.append(
            f"| {target['target']} | {target['measured']} | ≥ 1.5× | {'yes' if target['met'] else '**no**'} |"
        )
    doc["targets"] = rows_out + placement_targets
    args.results.write_text(json.dumps(doc, indent=2) + "\n")
    if rerun:
        md += [
            "",
            "The shm / MPI and shm / threads rows are from the rerun below (MPI with its best setting).",
        ]
    md += ["", f"memcpy of 100 MB in the same run (for scale, not a limit): {memcpy:.0f} MB/s.", ""]
    if same_work:
        raw = statistics.median(r["raw_slots_100MB_mb_s"] for r in handoff_runs)
        md += [
            f"The same work without strata (two processes, two 100 MB slots of one shared mapping, the same fill "
            f"and verify, a spinning sequence number as the handoff): {raw:.0f} MB/s (median of "
            f"{len(handoff_runs)} runs).",
            "",
        ]

    if rerun:
        md += ratios_report.section(rerun)
    md += placement_md
    md += [
        "## Workflow types and copy variants at 10 MB (Figs. 3 and 4)",
        "",
        "![](fig3_types.png)",
        "![](fig4_copy.png)",
        "",
        "| workflow | method | MB/s | iterations/s | p50 handoff (µs) |",
        "|---|---|---|---|---|",
    ]
    for s, n in shapes:
        for r in pick(types, shape=s, tasks=n):
            md.append(
                f"| {s}({n}) | {r['method']} | {r['throughput_mb_s']:.0f} | {r['iterations_per_s']:.1f} | "
                f"{r['handoff_p50_ns'] / 1e3:.0f} |"
            )
    md += [
        "",
        "Iterations/s relative to MPI (the paper: simple 0.89x, pipeline 1.21x, scatter-gather 1.85x):",
        "",
        "| workflow | shm/MPI | threads/MPI | copy-into/MPI | copy-from/MPI | copy/MPI |",
        "|---|---|---|---|---|---|",
    ]
    for s, n in shapes:
        md.append(
            f"| {s}({n}) | "
            + " | ".join(
                f"{ratio(s, n, m, 'mpi'):.2f}x" for m in ["shm", "threads", "copy-into", "copy-from", "copy"]
            )
            + " |"
        )
    md += [
        "",
        "## Workflow size, 3 to 34 tasks at 10 MB (Fig. 5)",
        "",
        "![](fig5_scaling.png)",
        "",
        "| workflow | tasks | shm MB/s | MPI MB/s | threads MB/s | shm/threads |",
        "|---|---|---|---|---|---|",
    ]
    for shape in ["pipeline", "scatter-gather"]:
        for n in sorted({r["tasks"] for r in pick(scaling, shape=shape)}):
            v = {
                m: (one(scaling, shape=shape, tasks=n, method=m) or {}).get("throughput_mb_s", float("nan"))
                for m in ["shm", "mpi", "threads"]
            }
            md.append(
                f"| {shape} | {n} | {v['shm']:.0f} | {v['mpi']:.0f} | {v['threads']:.0f} | "
                f"{v['shm'] / v['threads']:.2f} |"
            )
    md += [
        "",
        "## Data size, 1 MB to 1 GB (Fig. 6)",
        "",
        "![](fig6_sizes.png)",
        "",
        "1 GB runs only the simple workflow: 9 tasks x 2 slots x 1 GB does not fit beside the other work on "
        "this 23 GB machine.",
        "",
        "| workflow | size (MB) | shm MB/s | MPI MB/s | threads MB/s |",
        "|---|---|---|---|---|",
    ]
    for shape in ["simple", "pipeline", "scatter-gather"]:
        for size in sorted({r["data_size"] for r in pick(sizes, shape=shape)}):
            v = {
                m: (one(sizes, shape=shape, data_size=size, method=m) or {}).get(
                    "throughput_mb_s", float("nan")
                )
                for m in ["shm", "mpi", "threads"]
            }
            md.append(f"| {shape} | {size / MB:.0f} | {v['shm']:.0f} | {v['mpi']:.0f} | {v['threads']:.0f} |")
    md += [
        "",
        "## Handoff latency between two processes (microbenchmark)",
        "",
        "One 4 KiB message in flight through a strata::Port with one slot, between two processes; busy-poll "
        "spins on zero-timeout recv/loan calls, blocking sleeps on the port's futex (the producer waits 50 µs "
        "between messages so the consumer really sleeps). "
        "Touched: the producer writes the payload and the consumer reads and checks it.",
        "",
        "| wait | payload | p50 (µs) | p90 (µs) | p99 (µs) |",
        "|---|---|---|---|---|",
    ]
    for run in handoff_runs[:1]:
        for e in run["latency"]:
            md.append(
                f"| {e['wait']} | {e['payload']} | {e['p50_ns'] / 1e3:.2f} | {e['p90_ns'] / 1e3:.2f} | "
                f"{e['p99_ns'] / 1e3:.2f} |"
            )
    md += [
        "",
        "(The first run's percentiles; the targets use the median p50 over all runs.)",
        "",
        "100 MB payloads written by the producer and read by the consumer through 2 slots, against "
        + ("the same work without strata and " if same_work else "")
        + "memcpy of 100 MB measured in the same run, every run (the targets use the median):",
        "",
        "| run | wait | MB/s | memcpy MB/s | memcpy / this |"
        + (" same work MB/s | same work / this |" if same_work else ""),
        "|---|---|---|---|---|" + ("---|---|" if same_work else ""),
    ]
    for i, run in enumerate(handoff_runs):
        for e in run["throughput"]:
            same = (
                f" {run['raw_slots_100MB_mb_s']:.0f} | {e['raw_slots_over_this']:.2f} |" if same_work else ""
            )
            md.append(
                f"| {i + 1} | {e['wait']} | {e['mb_s']:.0f} | {run['memcpy_100MB_mb_s']:.0f} | "
                f"{e['memcpy_over_this']:.2f} |{same}"
            )
    md.append("")
    (out / "results.md").write_text("\n".join(md))
    print(f"wrote {out / 'results.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
