# SPDX-License-Identifier: MIT
"""Turns the storage-windows results (a directory of JSON lines, one file per application, as
bench/storage-windows/run writes them) into results.json, results.md and plots, beside the paper's
figures and the issue's targets.

Usage: report.py RAW --out-dir DIR      RAW: that directory, or a results.json written before
       report.py --unpack RESULTS_JSON RAW_DIR   (the directory again, for a run that adds to it)
       report.py --machine-line      (what bench/storage-windows/run records in RAW_DIR/machine.txt)
The report is a function of the raw records alone (the machine line too, from machine.txt), and
results.json holds every one of them ("records", "meta"), so rerunning report.py on the committed
results.json regenerates results.json and results.md byte for byte.
Medians everywhere: the machine is shared (2 cores, other builds running), so single runs are noisy.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import nodes_report  # noqa: E402
from report_plots import save_png  # noqa: E402
from shared_targets import shared_rows  # noqa: E402

KERNELS = ["SEQ", "PAD", "RND", "MIX"]
RMA_OPS = [
    "unidir_put",
    "unidir_get",
    "bidir_put",
    "bidir_get",
    "accumulate",
    "get_accumulate",
    "fetch_and_op",
    "compare_and_swap",
    "one_put_all",  # the multiple and parallel transfers: on the emulated nodes (nodes_report.py)
    "one_get_all",
    "exchange_put",
    "exchange_get",
]


def load(raw: Path) -> tuple[dict[str, list[dict]], dict[str, dict]]:
    if raw.is_file():  # a results.json: its records and metadata are the raw files'
        doc = json.loads(raw.read_text())
        return doc["records"], doc["meta"]
    records: dict[str, list[dict]] = {}
    meta: dict[str, dict] = {}
    for path in sorted(raw.glob("*.jsonl")):
        records[path.stem] = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for path in sorted(raw.glob("*.meta.json")):
        meta[path.name.removesuffix(".meta.json")] = json.loads(path.read_text())
    return records, meta


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def spread(values):
    """Interquartile range over the median: how far apart the middle half of the runs lie."""
    values = [v for v in values if v is not None]
    if len(values) < 4:
        return None
    q1, _, q3 = statistics.quantiles(values, n=4)
    return (q3 - q1) / statistics.median(values)


def machine_line() -> str:
    cpu = "unknown CPU"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem = 0
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            mem = int(line.split()[1]) * 1024
    mpi = "MPICH"
    if shutil.which("mpichversion"):
        out = subprocess.run(["mpichversion"], capture_output=True, text=True, check=False).stdout
        match = re.search(r"Version:\s*(\S+)", out)
        device = re.search(r"Device:\s*(\S+)", out)
        if match:
            mpi = f"MPICH {match.group(1)}" + (f" ({device.group(1)})" if device else "")
    return (
        f"{cpu}, {os.cpu_count()} cores, {mem / 2**30:.0f} GiB, Linux {platform.release()}, {mpi}, "
        f"files on {disk_of('/var/tmp')}"
    )


def disk_of(path: str) -> str:
    try:
        out = subprocess.run(
            ["df", "--output=source,fstype", path], capture_output=True, text=True, check=True
        )
        source, fstype = out.stdout.splitlines()[1].split()
        return f"{source} ({fstype})"
    except (subprocess.CalledProcessError, OSError, IndexError, ValueError):
        return "unknown device"


def fmt(value, digits=2, suffix=""):
    if value is None:
        return "—"
    return f"{value:.{digits}f}{suffix}"


def verdict(ok: bool | str | None) -> str:
    if isinstance(ok, str):  # "not established": too few runs to carry a verdict
        return f"**{ok}**"
    return "—" if ok is None else ("**met**" if ok else "**missed**")


# A target is judged on one configuration named before the run, never on the best of several:
# mSTREAM on access_style=write_mostly (issue 15: "the configuration the docs recommend";
# docs/mpi-storage-windows.md recommends it for windows rewritten between syncs that fit in
# memory; named at 04:15 UTC on 26 Nov, before the 04:41 run), the other variants are reported beside it.
MSTREAM_NAMED = {"storage": "storage (write_mostly)", "combined": "combined (write_mostly)"}
# Since the run of 26 Nov 07:10 UTC (issue 15; named in the README before it), every mSTREAM window is written whole once,
# untimed, before the kernels (a never-written anonymous page is the kernel's shared zero page, so
# reading it copied one cache-resident page: the memory window's SEQ and PAD were inflated by it);
# memory-lazy is the memory window without that write, the earlier baseline, beside it.
LAZY = "memory-lazy"
# One run cannot carry a verdict on a noisy machine: a timing target needs this many runs of
# every variant it compares (the project's rule: medians of at least 5), else it is "not established".
MIN_RUNS_FOR_VERDICT = 5
# Which application's runs each timing target rests on (crash consistency is not a timing target).
TARGET_APP = {"mSTREAM": "mstream", "RMA": "rma", "DHT": "dht", "MapReduce": "mapreduce", "HACC": "hacc"}


# --- per application ----------------------------------------------------------------------------


def limits_summary(rows):
    big = [r for r in rows if r["memcpy_bytes"] >= 2**28]
    small = [r for r in rows if r["memcpy_bytes"] < 2**28]
    return {
        "memcpy_gbps_large": median([r["memcpy_gbps"] for r in big]),
        "memcpy_gbps_segment": median([r["memcpy_gbps"] for r in small]),
        "disk_write_gbps": median([r["disk_write_gbps"] for r in big or rows]),
        "disk_read_gbps": median([r["disk_read_gbps"] for r in big or rows]),
    }


def mstream_label(r):
    label = r["variant"]
    if r.get("access_style"):
        label += f" ({r['access_style']})"
    return label


def mstream_summary(rows):
    groups = defaultdict(list)
    for r in rows:
        groups[(mstream_label(r), r["kernel"])].append(r)
    labels = list(dict.fromkeys(mstream_label(r) for r in rows))
    table = {}
    for label in labels:
        table[label] = {
            k: {
                "gbps": median([r["gbps"] for r in groups[(label, k)]]),
                "flush_share": median([r["flush_share"] for r in groups[(label, k)]]),
            }
            for k in KERNELS
        }
    # Paired ratios: the variants of one process took turns kernel by kernel,
    # so each run's ratio to its own memory window cancels slow phases of the machine.
    runs = defaultdict(dict)
    for r in rows:
        runs[(r["repeat"], r["kernel"])][mstream_label(r)] = r["gbps"]

    def paired_ratios(base):
        ratios = {}
        for label in labels:
            if label == base:
                continue
            per_kernel = []
            for k in KERNELS:
                paired = [
                    v[label] / v[base] for (_, kk), v in runs.items() if kk == k and label in v and base in v
                ]
                if paired:
                    per_kernel.append(statistics.median(paired))
            ratios[label] = statistics.mean(per_kernel) if per_kernel else None
        return ratios

    ratios = paired_ratios("memory")
    # memory-lazy (runs from 26 Nov 07:00 UTC on): the memory window without the first write of every
    # page, the baseline of the runs before; reported beside the judged ratio, never judged.
    ratios_lazy = paired_ratios(LAZY) if LAZY in labels else {}
    # The same ratio within each repeat (one process), to show the spread between runs.
    per_repeat = {}
    for label in labels:
        if label == "memory":
            continue
        per_repeat[label] = [
            statistics.mean(
                v[label] / v["memory"] for (rr, _), v in runs.items() if rr == repeat and label in v
            )
            for repeat in sorted({rr for rr, _ in runs})
        ]
    # What the flush alone allows: the ratio if everything but the final flush ran at the memory
    # window's speed, memory seconds / (memory seconds + the variant's flush seconds), paired per run.
    timed = defaultdict(dict)
    for r in rows:
        timed[(r["repeat"], r["kernel"])][mstream_label(r)] = r
    flush_bound = {}
    for label in labels:
        if label == "memory":
            continue
        per_kernel = []
        for k in KERNELS:
            paired = [
                v["memory"]["seconds"] / (v["memory"]["seconds"] + v[label].get("flush_seconds", 0))
                for (_, kk), v in timed.items()
                if kk == k and label in v and "memory" in v and "seconds" in v["memory"]
            ]
            if paired:
                per_kernel.append(statistics.median(paired))
        flush_bound[label] = statistics.mean(per_kernel) if per_kernel else None
    sample = rows[0] if rows else {}
    return {
        "table": table,
        "ratio_to_memory": ratios,
        "ratio_to_memory_lazy": ratios_lazy,
        "flush_bound": flush_bound,
        "ratio_per_repeat": per_repeat,
        "window_bytes": sample.get("window_bytes"),
        "segment_bytes": sample.get("segment_bytes"),
        "iters": sample.get("iters"),
    }


def rma_summary(rows):
    by_run = defaultdict(dict)
    for r in rows:
        by_run[(r["op"], r["bytes"], r["repeat"])][r["variant"]] = r

    def metric(r):
        return r["gbps"] if r["op"] not in ("fetch_and_op", "compare_and_swap") else 1.0 / r["usec_per_op"]

    cells = defaultdict(lambda: defaultdict(list))
    for (op, size, _), variants in by_run.items():
        if "storage" not in variants:
            continue
        for base in ("memory", "memory-create"):
            if base in variants:
                cells[(op, size)][base].append(metric(variants["storage"]) / metric(variants[base]))
        for v, r in variants.items():
            cells[(op, size)]["gbps:" + v].append(r["gbps"])
            cells[(op, size)]["usec:" + v].append(r["usec_per_op"])
    table = {}
    for (op, size), values in sorted(cells.items(), key=lambda kv: (RMA_OPS.index(kv[0][0]), kv[0][1])):
        table[f"{op}/{size}"] = {key: median(v) for key, v in values.items()}
    overall = {}
    for base in ("memory", "memory-create"):
        ratios = [t[base] for t in table.values() if t.get(base)]
        overall[base] = {
            "median_ratio": median(ratios),
            "within_5_percent": sum(1 for x in ratios if x >= 0.95) / len(ratios) if ratios else None,
            "cells": len(ratios),
        }
    return {"table": table, "overall": overall, "iters": rows[0]["iters"] if rows else None}


def dht_summary(rows):
    groups = defaultdict(list)
    for r in rows:
        groups[r["variant"]].append(r)
    table = {
        v: {
            key: median([r[key] for r in rs])
            for key in ("seconds", "init_seconds", "insert_seconds", "sync_seconds")
        }
        for v, rs in groups.items()
    }
    for v, rs in groups.items():
        table[v]["best_seconds"] = min(r["seconds"] for r in rs)
    memory = table.get("memory", {}).get("seconds")
    create = table.get("memory-create", {}).get("seconds")
    best = table.get("memory", {}).get("best_seconds")
    ratios_best = {v: t["best_seconds"] / best for v, t in table.items() if best and v != "memory"}
    ratios = {v: t["seconds"] / memory for v, t in table.items() if memory and v != "memory"}
    ratios_create = {v: t["seconds"] / create for v, t in table.items() if create and v != "memory-create"}
    sample = rows[0] if rows else {}
    return {
        "table": table,
        "ratio_to_memory": ratios,
        "ratio_to_memory_create": ratios_create,
        "best_ratio_to_memory": ratios_best,
        "runs": {v: len(rs) for v, rs in groups.items()},
        "lv": sample.get("lv"),
        "dht_bytes": sample.get("dht_bytes"),
        "ranks": sample.get("ranks"),
    }


# Out of core: the combined windows the verdict rests on (named before the run) keep half the
# limit in memory at every ratio, storage_alloc_factor = 1 - 0.5 / ratio. Other splits measured
# beside them are reported as "combined (factor F)" and carry no verdict.
OOC_NAMED_MEMORY_SHARE = 0.5


def ooc_key(variant, factor, ratio):
    if variant not in ("combined", "plain-combined") or factor is None:
        return variant
    if abs(float(factor) - (1 - OOC_NAMED_MEMORY_SHARE / float(ratio))) < 1e-4:
        return variant
    return f"{variant} (factor {float(factor):.3f})"


# The same pattern without strata (issue 29): sw-dht-plain makes strata's storage and combined layouts
# by hand (plain_window.h) and runs the same inserts on the same file, with every MPI call going to MPI
# itself. Each plain variant is reported beside the strata variant it copies.
OOC_PLAIN = {"storage": "plain-storage", "combined": "plain-combined"}


def ooc_without_strata(entry, dht, labels, ratio):
    """Strata's windows against the same layouts without strata, paired per repeat."""
    out = {}
    for kind, plain in OOC_PLAIN.items():
        mine, theirs = entry["variants"].get(kind), entry["variants"].get(plain)
        if not theirs:
            continue

        def by_repeat(variant):
            return {
                d["repeat"]: d["seconds"]
                for d in dht
                if d["label"] in labels and ooc_key(d["variant"], d.get("factor"), ratio) == variant
            }

        strata, without = by_repeat(kind), by_repeat(plain)
        paired = sorted(strata[r] / without[r] for r in strata if r in without and without[r])
        out[kind] = {
            "plain_variant": plain,
            "factor": theirs.get("factor"),
            "seconds": mine["seconds"] if mine else None,
            "plain_seconds": theirs["seconds"],
            "ratio_to_projection": mine["ratio_to_projection"] if mine else None,
            "plain_ratio_to_projection": theirs["ratio_to_projection"],
            "to_plain": mine["seconds"] / theirs["seconds"]
            if mine and mine["seconds"] and theirs["seconds"]
            else None,
            "paired_to_plain": paired,
            "disk_read_bytes": mine.get("disk_read_bytes") if mine else None,
            "plain_disk_read_bytes": theirs.get("disk_read_bytes"),
            "disk_written_bytes": mine.get("disk_written_bytes") if mine else None,
            "plain_disk_written_bytes": theirs.get("disk_written_bytes"),
            "major_faults": mine.get("major_faults") if mine else None,
            "plain_major_faults": theirs.get("major_faults"),
        }
    return out


def ooc_summary(rows):
    runs = [r for r in rows if r.get("app") == "ooc-run" and "skipped" not in r]
    dht = [r for r in rows if r.get("app") == "dht"]
    out = {}
    for ratio in sorted({r["ratio"] for r in runs}):
        label = f"ooc-{ratio:g}" if isinstance(ratio, float) else f"ooc-{ratio}"
        # Older runs wrote the ratio as given ("2.0"); the DHT's label carries it the same way.
        labels = {label, f"ooc-{ratio}", f"ooc-{ratio:.1f}" if isinstance(ratio, float) else label}
        unconstrained = [r for r in dht if r["label"] in {f"{x}-unconstrained" for x in labels}]
        projection = median([r["seconds"] for r in unconstrained])
        by_repeat = {r["repeat"]: r["seconds"] for r in unconstrained}
        entry = {
            "projection_seconds": projection,
            "projection_spread": spread([r["seconds"] for r in unconstrained]),
            "variants": {},
            "runs": {"projection": len(unconstrained)},
        }
        proj_runs = [r for r in runs if r["ratio"] == ratio and r["variant"] == "projection"]
        if proj_runs:
            entry["projection_disk_read_bytes"] = median([r.get("disk_read_bytes") for r in proj_runs])
            entry["projection_disk_written_bytes"] = median([r.get("disk_written_bytes") for r in proj_runs])
        for variant in dict.fromkeys(
            ooc_key(r["variant"], r.get("factor"), ratio) for r in runs if r["ratio"] == ratio
        ):
            if variant == "projection":
                continue
            mine = [
                r
                for r in runs
                if r["ratio"] == ratio and ooc_key(r["variant"], r.get("factor"), ratio) == variant
            ]
            done = [
                d
                for d in dht
                if d["label"] in labels and ooc_key(d["variant"], d.get("factor"), ratio) == variant
            ]
            completed = all(r["exit_code"] == 0 for r in mine)
            seconds = median([d["seconds"] for d in done]) if done and completed else None
            # Against the projections of its own repeats (appended commands run their own projections).
            own = median([by_repeat[d["repeat"]] for d in done if d["repeat"] in by_repeat])
            # Paired per repeat: each run against the projection of its own repeat.
            paired = [d["seconds"] / by_repeat[d["repeat"]] for d in done if d["repeat"] in by_repeat]
            entry["runs"][variant] = len(mine)
            entry["variants"][variant] = {
                "completed": completed,
                "exit_code": max((r["exit_code"] for r in mine), key=abs),
                "oom_kills": max(r["oom_kills"] for r in mine),
                "max_usage_bytes": max(r["max_usage_bytes"] for r in mine),
                "limit_bytes": mine[0]["limit_bytes"],
                "factor": mine[0].get("factor", done[0].get("factor") if done else None),
                "dht_bytes": done[0]["dht_bytes"] if done else None,
                "seconds": seconds,
                "spread": spread([d["seconds"] for d in done]) if completed else None,
                "insert_seconds": median([d["insert_seconds"] for d in done]) if completed else None,
                "init_seconds": median([d["init_seconds"] for d in done]) if completed else None,
                "projection_seconds": own,
                "ratio_to_projection": seconds / own if seconds and own else None,
                "paired_ratios": sorted(paired) if completed else [],
                "major_faults": median([r.get("major_faults") for r in mine]),
                "disk_read_bytes": median([r.get("disk_read_bytes") for r in mine]),
                "disk_written_bytes": median([r.get("disk_written_bytes") for r in mine]),
                "wall_seconds": median([r["wall_seconds"] for r in mine]),
            }
        without = ooc_without_strata(entry, dht, labels, ratio)
        if without:
            entry["without_strata"] = without
        out[str(ratio)] = entry
    skipped = [r["skipped"] for r in rows if "skipped" in r]
    limits = [r for r in rows if r.get("app") == "limits"]
    randio = [r for r in rows if r.get("app") == "randio"]
    return {
        # One measurement per command (appended runs each measure the disk again), in run order.
        "random_read_usec_per_command": [r["random_read_usec"] for r in randio],
        "random_write_usec_per_command": [r["random_write_usec"] for r in randio],
        "disk_write_gbps_per_command": [r["disk_write_gbps"] for r in limits],
        "random_read_usec": median([r["random_read_usec"] for r in randio]),
        "random_write_usec": median([r["random_write_usec"] for r in randio]),
        "random_read_iops": median([r["random_read_iops"] for r in randio]),
        "random_write_iops": median([r["random_write_iops"] for r in randio]),
        "ratios": out,
        "skipped": skipped[0] if skipped else None,
        "disk_write_gbps": median([r["disk_write_gbps"] for r in limits]),
        "disk_read_gbps": median([r["disk_read_gbps"] for r in limits]),
    }


# The HACC storage variant the checkpoint and restart targets rest on, named before the run: the
# checkpoint window with access_style=write_once, the restart window with read_once.
HACC_NAMED = "storage-once"


def hacc_summary(rows):
    groups = defaultdict(list)
    for r in rows:
        groups[r.get("label", r["variant"])].append(r)
    table = {}
    for v, rs in groups.items():
        row = {k: median([r[k] for r in rs]) for k in ("checkpoint_seconds", "restart_seconds", "file_bytes")}
        row["runs"] = len(rs)
        row["checkpoint_spread"] = spread([r["checkpoint_seconds"] for r in rs])
        row["restart_spread"] = spread([r["restart_seconds"] for r in rs])
        row["access_style"] = rs[0].get("access_style", "")
        row["restart_access_style"] = rs[0].get("restart_access_style", "")
        for phase in ("checkpoint_phases", "restart_phases", "restart_phases_slowest"):
            if all(phase in r for r in rs):
                row[phase] = {k: median([r[phase][k] for r in rs]) for k in rs[0][phase]}
        table[v] = row
    mpiio = {k: table[k] for k in ("mpiio", "mpiio-coll") if k in table}
    best_ckpt = min((r["checkpoint_seconds"] for r in mpiio.values()), default=None)
    best_restart = min((r["restart_seconds"] for r in mpiio.values()), default=None)
    for row in table.values():
        row["checkpoint_to_best_mpiio"] = row["checkpoint_seconds"] / best_ckpt if best_ckpt else None
        row["restart_to_best_mpiio"] = row["restart_seconds"] / best_restart if best_restart else None
    return {
        "table": table,
        "particles_per_rank": rows[0]["particles_per_rank"] if rows else None,
        "best_mpiio_checkpoint_seconds": best_ckpt,
        "best_mpiio_restart_seconds": best_restart,
    }


def hacc_bounds(hacc, limits):
    """The time the disk alone needs for the file's bytes, at the bandwidths measured in the same run."""
    if not hacc or not limits:
        return None
    size = next(iter(hacc["table"].values()))["file_bytes"]
    write, read = limits.get("disk_write_gbps"), limits.get("disk_read_gbps")
    out = {
        "write_seconds": size / (write * 1e9) if write else None,
        "read_seconds": size / (read * 1e9) if read else None,
    }
    # How close each variant gets to the device: its median time / the disk's time for the bytes.
    out["to_disk"] = {
        v: {
            "checkpoint": row["checkpoint_seconds"] / out["write_seconds"] if out["write_seconds"] else None,
            "restart": row["restart_seconds"] / out["read_seconds"] if out["read_seconds"] else None,
        }
        for v, row in hacc["table"].items()
    }
    return out


def mapreduce_label(r):
    name = "MR-1S" if r["impl"] == "1s" else "MR-2S"
    if r.get("combine"):
        name += " (combiner)"
    return name


# MR-1S's checkpoint kinds: in place (MPI_Win_sync of the table), snapshot (copied into an async
# checkpoint window between two barriers, durable at the next checkpoint) and non-blocking snapshot
# (the same cut with MPI_Ibarrier, overlapped with the next map phase). The MapReduce targets rest on
# the configuration named before the run: the non-blocking snapshot where the run has it (from the
# issue 15 rerun with the non-blocking cut, 26 Nov), else the snapshot; each is compared with the same storage
# window without checkpoints.
# From the fourth rerun of 26 Nov the snapshots also run with their checkpoint window hinted
# access_style=write_mostly ("slot_access_style"), and the configuration named before it is the
# non-blocking snapshot with those slots.
MR_NAMES = {
    "windows": "MR-1S in place",
    "snapshot": "MR-1S snapshot",
    "snapshot-nb": "MR-1S non-blocking snapshot",
}
MR_JUDGED_ORDER = [
    "MR-1S non-blocking snapshot (write_mostly slots)",
    "MR-1S non-blocking snapshot",
    "MR-1S snapshot",
]


def mapreduce_kind(r):
    style = r.get("slot_access_style", "none")
    return r["checkpoint"] + (f"+{style}" if style not in ("none", "") else "")


def mapreduce_judged(table):
    return next((name for name in MR_JUDGED_ORDER if name in table), "MR-1S snapshot")


def mapreduce_summary(rows):
    # The disk's bandwidth measured beside the runs (sw-limits, app "limits"): what bounds a checkpoint.
    limits = [r for r in rows if r.get("app") == "limits"]
    rows = [r for r in rows if r.get("app", "mapreduce") == "mapreduce"]
    groups = defaultdict(list)
    for r in rows:
        groups[(mapreduce_label(r), mapreduce_kind(r))].append(r)
    table = {}
    for (name, kind), ckpt in groups.items():
        if kind == "none":
            continue
        none = groups.get((name, "none"), [])
        t_none = median([r["seconds"] for r in none])
        t_ckpt = median([r["seconds"] for r in ckpt])
        share = median([r["checkpoint_seconds"] / (r["seconds"] - r["checkpoint_seconds"]) for r in ckpt])
        base_kind, _, style = kind.partition("+")
        label = MR_NAMES.get(base_kind, name) if name == "MR-1S" else name
        if style:
            label += f" ({style} slots)"
        table[label] = {
            "seconds_no_checkpoint": t_none,
            "seconds_checkpoint": t_ckpt,
            "overhead_end_to_end": (t_ckpt - t_none) / t_none if t_none and t_ckpt else None,
            "checkpoint_seconds": median([r["checkpoint_seconds"] for r in ckpt]),
            "overhead_measured": share,
            "checkpoints": ckpt[0]["checkpoints"] if ckpt else None,
            "runs": min(len(ckpt), len(none)),
            "spread_no_checkpoint": spread([r["seconds"] for r in none]),
            "spread_checkpoint": spread([r["seconds"] for r in ckpt]),
        }
        # Paired per repeat: each run with checkpoints against the run without in the same repeat
        # (the variants of a repeat run back to back), so a slow spell of the machine cancels.
        base = {r["repeat"]: r["seconds"] for r in none}
        paired = sorted(
            (r["seconds"] - base[r["repeat"]]) / base[r["repeat"]] for r in ckpt if r["repeat"] in base
        )
        table[label]["paired_overheads"] = paired
        table[label]["paired_overhead"] = median(paired)
        if len(paired) >= 4:
            q1, _, q3 = statistics.quantiles(paired, n=4)
            table[label]["paired_overhead_quartiles"] = [q1, q3]
        if all("checkpoint_phases" in r for r in ckpt):
            table[label]["checkpoint_phases"] = {
                k: median([r["checkpoint_phases"][k] for r in ckpt]) for k in ckpt[0]["checkpoint_phases"]
            }
    checksums = sorted({r["checksum"] for r in rows})
    schedules = {r.get("schedule", "shuffled") for r in rows}
    sample = rows[0] if rows else {}
    return {
        "table": table,
        "disk_write_gbps": median([r["disk_write_gbps"] for r in limits]),
        "disk_read_gbps": median([r["disk_read_gbps"] for r in limits]),
        "checksums_agree": len(checksums) == 1,
        "schedule": schedules.pop() if len(schedules) == 1 else "mixed",
        "corpus_bytes": sample.get("corpus_bytes"),
        "task_bytes": sample.get("task_bytes"),
        "words": sample.get("words"),
        "distinct": sample.get("distinct"),
    }


def crash_summary(rows):
    runs = [r for r in rows if r.get("app") == "crash-run"]
    return {"runs": runs, "all_ok": bool(runs) and all(r["ok"] for r in runs)}


# --- plots ----------------------------------------------------------------------------------------


def plot_mstream(summary, out: Path):
    table = summary["table"]
    labels = list(table)
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / max(len(labels), 1)
    for i, label in enumerate(labels):
        ax.bar(
            [k + i * width for k in range(len(KERNELS))],
            [table[label][k]["gbps"] or 0 for k in KERNELS],
            width,
            label=label,
        )
    ax.set_xticks([k + 0.4 - width / 2 for k in range(len(KERNELS))], KERNELS)
    ax.set_ylabel("GB/s (median)")
    ax.set_title("mSTREAM: window bandwidth, flush included")
    ax.legend(fontsize=7)
    fig.tight_layout()
    save_png(fig, out / "mstream.png", dpi=110)
    plt.close(fig)


def plot_rma(summary, out: Path):
    fig, ax = plt.subplots(figsize=(9, 4))
    keys = list(summary["table"])
    for base, marker in (("memory", "o"), ("memory-create", "s")):
        ax.plot(
            range(len(keys)), [summary["table"][k].get(base) for k in keys], marker, label=f"storage / {base}"
        )
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.axhspan(0.95, 1.05, color="green", alpha=0.1, label="within 5%")
    ax.set_xticks(range(len(keys)), [k.replace("/", "\n") for k in keys], rotation=90, fontsize=5)
    ax.set_ylabel("throughput ratio (median)")
    ax.set_yscale("log")
    ax.set_title("IMB-RMA style: storage windows vs memory windows")
    ax.legend(fontsize=7)
    fig.tight_layout()
    save_png(fig, out / "rma.png", dpi=110)
    plt.close(fig)


def plot_dht(dht, ooc, out: Path):
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    names = list(dht["table"])
    axes[0].bar(names, [dht["table"][v]["seconds"] for v in names])
    axes[0].set_ylabel("seconds (median)")
    axes[0].set_title("DHT in memory")
    for ratio, entry in ooc["ratios"].items():
        variants = entry["variants"]
        names = ["projection"] + list(variants)
        values = [entry["projection_seconds"] or 0] + [variants[v]["seconds"] or 0 for v in variants]
        bars = axes[1].bar([f"{n}\n{ratio}x" for n in names], values)
        for bar, name in zip(bars[1:], variants, strict=True):
            if not variants[name]["completed"]:
                axes[1].annotate(
                    "failed\n(OOM)", (bar.get_x() + bar.get_width() / 2, 0), ha="center", fontsize=7
                )
    axes[1].set_title("DHT out of core (memory cgroup)")
    axes[1].tick_params(axis="x", labelsize=7)
    fig.tight_layout()
    save_png(fig, out / "dht.png", dpi=110)
    plt.close(fig)


def plot_checkpoint(hacc, mapreduce, out: Path):
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    names = list(hacc["table"])
    x = range(len(names))
    axes[0].bar(
        [i - 0.2 for i in x], [hacc["table"][n]["checkpoint_seconds"] for n in names], 0.4, label="checkpoint"
    )
    axes[0].bar(
        [i + 0.2 for i in x], [hacc["table"][n]["restart_seconds"] for n in names], 0.4, label="restart"
    )
    axes[0].set_xticks(list(x), names, fontsize=6, rotation=20)
    axes[0].set_ylabel("seconds (median)")
    axes[0].set_title("HACC-IO-like checkpoint/restart")
    axes[0].legend(fontsize=7)
    names = list(mapreduce["table"])
    axes[1].bar(names, [100 * (mapreduce["table"][n]["overhead_end_to_end"] or 0) for n in names])
    axes[1].set_ylabel("checkpoint overhead end to end, %")
    axes[1].set_title("MapReduce word count")
    axes[1].tick_params(axis="x", labelsize=7)
    fig.tight_layout()
    save_png(fig, out / "checkpoint.png", dpi=110)
    plt.close(fig)


# --- markdown ------------------------------------------------------------------------------------


def pct(x):
    return f"{fmt(100 * x, 1)}%" if x is not None else "—"


def gib(n):
    return f"{n / 2**30:.2f} GiB" if n and n >= 2**30 else (f"{n / 2**20:.0f} MiB" if n else "—")


def ooc_without_strata_lines(ratio, without):
    lines = [
        f"### The same pattern without strata ({ratio}×)",
        "",
        "The same inserts on the same layout made by hand (`sw-dht-plain`, built without libstrata-mpi: "
        "`plain_window.h`): anonymous memory and a `MAP_SHARED` mapping of a file of the same size in the same "
        "directory (`MADV_RANDOM`, as strata maps it), exposed with `MPI_Win_create`, synced with `MPI_Win_sync` "
        "and `msync`. Its time is what the kernel and MPI give this access pattern. Strata / without strata: the "
        "ratio of the medians; per repeat: each strata run over the plain run of its repeat.",
        "",
        "| layout | storage_alloc_factor | strata s | without strata s | strata / projection "
        "| without strata / projection | strata / without strata | per repeat | disk read (strata / without) "
        "| disk written (strata / without) | major faults (strata / without) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for kind, w in without.items():
        per_repeat = ", ".join(fmt(x) for x in w["paired_to_plain"]) or "—"
        lines.append(
            f"| {kind} / {w['plain_variant']} | {fmt(w.get('factor'), 3)} | {fmt(w['seconds'])} "
            f"| {fmt(w['plain_seconds'])} | {fmt(w['ratio_to_projection'])} | {fmt(w['plain_ratio_to_projection'])} "
            f"| {fmt(w['to_plain'])} | {per_repeat} | {gib(w['disk_read_bytes'])} / {gib(w['plain_disk_read_bytes'])} "
            f"| {gib(w['disk_written_bytes'])} / {gib(w['plain_disk_written_bytes'])} "
            f"| {fmt(w['major_faults'], 0)} / {fmt(w['plain_major_faults'], 0)} |"
        )
    lines.append("")
    return lines


def markdown(s, meta) -> str:
    lines = [
        "# Storage windows evaluation: results",
        "",
        "Generated by `bench/storage-windows/report.py`; the discussion is in README.md.",
        "",
        f"Machine: {s['machine']}.",
        "The machine is shared (2 cores; other builds ran during the measurements): every figure is the",
        "median of the repeats, and single runs vary by a factor of 2 or more for the MPI-heavy applications.",
        "",
        "| application | command | date | repeats | load average at start |",
        "|---|---|---|---|---|",
    ]
    for app, m in meta.items():
        lines.append(f"| {app} | `{m['command']}` | {m['date']} | {m['repeats']} | {m.get('loadavg', '—')} |")
    lim = s.get("limits")
    if lim:
        lines += [
            "",
            "## Physical limits",
            "",
            f"memcpy {fmt(lim['memcpy_gbps_large'])} GB/s (512 MiB buffers), "
            f"{fmt(lim['memcpy_gbps_segment'])} GB/s (16 MiB buffers); "
            f"disk O_DIRECT write {fmt(lim['disk_write_gbps'])} GB/s, read {fmt(lim['disk_read_gbps'])} GB/s.",
        ]
    ms = s.get("mstream")
    if ms:
        lazy = ms.get("ratio_to_memory_lazy") or {}
        lines += [
            "",
            f"## mSTREAM ({gib(ms['window_bytes'])} window, {gib(ms['segment_bytes'])} segments, "
            f"{ms['iters']} timed iterations + 1 cold, 1 rank)",
            "",
            "| variant | "
            + " | ".join(f"{k} GB/s (flush %)" for k in KERNELS)
            + " | ratio to memory (paired, mean of kernels) | per repeat | what the flush alone allows |"
            + (" ratio to memory-lazy (not judged) |" if lazy else ""),
            "|---" * (len(KERNELS) + 4 + (1 if lazy else 0)) + "|",
        ]
        for label, row in ms["table"].items():
            cells = [
                f"{fmt(row[k]['gbps'])} ({fmt(100 * (row[k]['flush_share'] or 0), 0)}%)" for k in KERNELS
            ]
            spread = ", ".join(fmt(x) for x in ms.get("ratio_per_repeat", {}).get(label, [])) or "—"
            lines.append(
                f"| {label} | "
                + " | ".join(cells)
                + f" | {fmt(ms['ratio_to_memory'].get(label))} | {spread} "
                f"| {fmt((ms.get('flush_bound') or {}).get(label))} |"
                + (f" {fmt(lazy.get(label))} |" if lazy else "")
            )
        lines += [
            "",
            "What the flush alone allows: memory seconds / (memory seconds + the variant's flush seconds), "
            "paired per run — the ratio if everything but the final flush to the disk ran at the memory "
            "window's speed.",
        ]
        if lazy:
            lines += [
                "",
                "Every window (and the MPI-IO file) is written whole once, untimed, before the kernels. "
                "memory-lazy is the memory window without that write, the baseline of the runs before "
                "26 Nov 2026: its never-written pages are the kernel's shared zero page, so the kernels "
                "that read segments they do not write (SEQ, PAD) copy one cache-resident page instead of "
                "memory.",
            ]
        lines += [
            "",
            "![mSTREAM](mstream.png)",
        ]
    rma = s.get("rma")
    if rma:
        lines += [
            "",
            f"## RMA microbenchmark ({rma['iters']} operations per measurement, non-aggregate, 2 ranks)",
            "",
            "Ratio = storage throughput / memory throughput (atomics: inverse latency); median over repeats.",
            "",
            "| operation/bytes | memory GB/s | memory-create GB/s | storage GB/s | storage/memory "
            "| storage/memory-create |",
            "|---|---|---|---|---|---|",
        ]
        for key, row in rma["table"].items():
            if key.startswith(("fetch_and_op", "compare_and_swap")):
                vals = [f"{fmt(row.get('usec:' + v))} µs" for v in ("memory", "memory-create", "storage")]
            else:
                vals = [fmt(row.get("gbps:" + v)) for v in ("memory", "memory-create", "storage")]
            lines.append(
                f"| {key} | "
                + " | ".join(vals)
                + f" | {fmt(row.get('memory'))} | {fmt(row.get('memory-create'))} |"
            )
        for base, o in rma["overall"].items():
            lines.append(
                f"\nstorage / {base}: median ratio {fmt(o['median_ratio'], 3)}, "
                f"{fmt(100 * (o['within_5_percent'] or 0), 0)}% of {o['cells']} cells at ≥ 0.95."
            )
        lines += ["", "![RMA](rma.png)"]
    dht = s.get("dht")
    if dht:
        lines += [
            "",
            f"## DHT ({dht['ranks']} ranks, LV {dht['lv']} elements per rank, heap factor 4, 80% fill, "
            f"{gib(dht['dht_bytes'])} in all)",
            "",
            "Median of the runs, and the best run (interference only adds time, so the best run is the",
            "closest to the undisturbed cost).",
            "",
            "| variant | total s | init s | insert s | sync s | ratio to memory | ratio to memory-create "
            "| best run s | best-run ratio to memory |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for v, row in dht["table"].items():
            lines.append(
                f"| {v} | {fmt(row['seconds'])} | {fmt(row['init_seconds'])} | {fmt(row['insert_seconds'])} "
                f"| {fmt(row['sync_seconds'], 3)} | {fmt(dht['ratio_to_memory'].get(v))} "
                f"| {fmt(dht['ratio_to_memory_create'].get(v))} | {fmt(row['best_seconds'])} "
                f"| {fmt(dht['best_ratio_to_memory'].get(v))} |"
            )
    ooc = s.get("ooc")
    if ooc:
        lines += ["", "## Out of core (DHT inside a cgroup v1 memory limit)", ""]
        if ooc["skipped"]:
            lines.append(f"Skipped: {ooc['skipped']}.")
        if ooc.get("disk_write_gbps"):
            lines += [
                f"Disk in the same run (sw-limits, O_DIRECT, 8 MiB requests): write {fmt(ooc['disk_write_gbps'])} GB/s, "
                f"read {fmt(ooc['disk_read_gbps'])} GB/s; random 4 KiB O_DIRECT, one at a time (randio.py): read "
                f"{fmt(ooc.get('random_read_usec'), 0)} µs ({fmt(ooc.get('random_read_iops'), 0)}/s), write "
                f"{fmt(ooc.get('random_write_usec'), 0)} µs ({fmt(ooc.get('random_write_iops'), 0)}/s). "
                "Disk bytes are the device's counters "
                "(/proc/diskstats) over each run, medians; major faults are the memory group's.",
                "",
            ]
        for ratio, entry in ooc["ratios"].items():
            lines += [
                f"DHT at {ratio}× the limit; in-memory projection (memory windows, same size, no limit): "
                f"{fmt(entry['projection_seconds'])} s (spread {pct(entry.get('projection_spread'))}, "
                f"{entry['runs'].get('projection')} runs).",
                "",
                "| variant | storage_alloc_factor | DHT size | limit | runs | completed | OOM kills | peak usage "
                "| seconds | spread | init / insert s | ratio to projection | per repeat | major faults "
                "| disk read | disk written | wall s |",
                "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
            ]
            for v, e in entry["variants"].items():
                per_repeat = ", ".join(fmt(x) for x in e.get("paired_ratios") or []) or "—"
                lines.append(
                    f"| {v} | {fmt(e.get('factor'), 3) if v != 'memory' else '—'} | {gib(e['dht_bytes'])} "
                    f"| {gib(e['limit_bytes'])} | {entry['runs'].get(v)} | {'yes' if e['completed'] else 'no'} "
                    f"| {e['oom_kills']} | {gib(e['max_usage_bytes'])} | {fmt(e['seconds'])} | {pct(e.get('spread'))} "
                    f"| {fmt(e.get('init_seconds'))} / {fmt(e.get('insert_seconds'))} "
                    f"| {fmt(e['ratio_to_projection'])} | {per_repeat} | {fmt(e.get('major_faults'), 0)} "
                    f"| {gib(e.get('disk_read_bytes'))} | {gib(e.get('disk_written_bytes'))} "
                    f"| {fmt(e.get('wall_seconds'), 1)} |"
                )
            lines.append("")
            if entry.get("without_strata"):
                lines += ooc_without_strata_lines(ratio, entry["without_strata"])
        if dht:  # the plot needs both (main)
            lines += ["![DHT](dht.png)"]
    hacc = s.get("hacc")
    if hacc:
        lines += [
            "",
            f"## HACC-IO-like checkpoint/restart ({hacc['particles_per_rank']} particles per rank, one shared file)",
            "",
            f"Judged: {HACC_NAMED} (named before the run). Ratios against the better of independent and "
            "collective MPI-IO; spread = interquartile range / median of the runs; phases are rank 0's "
            "medians (open, stores or write calls, sync, close).",
            "",
            "| variant | access_style (checkpoint / restart) | runs | checkpoint s | spread | × best MPI-IO "
            "| restart s (cold cache) | spread | × best MPI-IO | checkpoint phases s | restart phases s |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for v, row in hacc["table"].items():
            phases = " / ".join(fmt(x, 3) for x in (row.get("checkpoint_phases") or {}).values())
            rphases = " / ".join(fmt(x, 3) for x in (row.get("restart_phases") or {}).values())
            styles = f"{row.get('access_style') or '—'} / {row.get('restart_access_style') or '—'}"
            lines.append(
                f"| {v} | {styles if v.startswith('storage') else ''} | {row.get('runs')} "
                f"| {fmt(row['checkpoint_seconds'], 3)} | {pct(row.get('checkpoint_spread'))} "
                f"| {fmt(row.get('checkpoint_to_best_mpiio'), 2)} "
                f"| {fmt(row['restart_seconds'], 3)} | {pct(row.get('restart_spread'))} "
                f"| {fmt(row.get('restart_to_best_mpiio'), 2)} "
                f"| {phases} | {rphases} |"
            )
        bounds = s.get("hacc_bounds")
        if bounds:
            lines += [
                "",
                f"Disk alone, at the bandwidths sw-limits measured in the same run: writing the file "
                f"{fmt(bounds['write_seconds'], 3)} s, reading it {fmt(bounds['read_seconds'], 3)} s. "
                "Each variant's median time over the disk's (checkpoint / restart): "
                + ", ".join(
                    f"{v} {fmt(r['checkpoint'], 2)}× / {fmt(r['restart'], 2)}×"
                    for v, r in (bounds.get("to_disk") or {}).items()
                )
                + ".",
            ]
    mr = s.get("mapreduce")
    if mr:
        lines += [
            "",
            f"## MapReduce word count ({gib(mr['corpus_bytes'])} Zipf corpus, {mr['words']} words, "
            f"{mr['distinct']} distinct, {gib(mr['task_bytes'])} tasks)",
            "",
            "Overhead measured = time inside checkpoints / the rest of the run (median); end to end = "
            "(median with − median without) / median without.",
            "",
            "Checkpoint phases (sums over the run, the slower rank's): enter = the barrier before (the "
            "round's imbalance), write = MPI_Win_sync / the snapshot copy and the previous snapshot's sync / "
            "MPI_File_write_at_all, leave = the barrier after / MPI_File_sync. Non-blocking snapshot: enter = "
            "the wait for the first MPI_Ibarrier left after the map (and the last round's), write = the copies "
            "(most taken inside the map) and the waits for the previous snapshot's sync, leave = the wait for "
            "the second MPI_Ibarrier before the round's accumulates.",
            "",
            "| implementation | runs | no checkpoint s | spread | with checkpoint s | spread | checkpoints "
            "| time in checkpoints s | enter / write / leave s | overhead measured | overhead end to end "
            "| paired per repeat: median (quartiles) |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for name, row in mr["table"].items():
            phases = " / ".join(fmt(x, 3) for x in (row.get("checkpoint_phases") or {}).values())
            lines.append(
                f"| {name} | {row.get('runs')} | {fmt(row['seconds_no_checkpoint'])} "
                f"| {pct(row.get('spread_no_checkpoint'))} | {fmt(row['seconds_checkpoint'])} "
                f"| {pct(row.get('spread_checkpoint'))} "
                f"| {row['checkpoints']} | {fmt(row['checkpoint_seconds'], 3)} | {phases} "
                f"| {fmt(100 * (row['overhead_measured'] or 0), 1)}% "
                f"| {fmt(100 * (row['overhead_end_to_end'] or 0), 1)}% "
                f"| {pct(row.get('paired_overhead'))} "
                f"({' – '.join(pct(q) for q in row.get('paired_overhead_quartiles') or []) or '—'}) |"
            )
        lines.append(
            f"\nAll implementations found the same counts: {'yes' if mr['checksums_agree'] else 'NO'}."
        )
        if mr.get("disk_write_gbps"):
            lines.append(
                f"\nDisk beside the runs (sw-limits, O_DIRECT, 8 MiB requests): write {fmt(mr['disk_write_gbps'])} GB/s, "
                f"read {fmt(mr['disk_read_gbps'])} GB/s."
            )
        lines += ["", "![checkpoint](checkpoint.png)"]
    crash = s.get("crash")
    if crash:
        lines += [
            "",
            "## Crash consistency",
            "",
            "| mode | last complete checkpoint before the kill | resumed from | verified |",
            "|---|---|---|---|",
        ]
        for r in crash["runs"]:
            lines.append(
                f"| {r['mode']} | {r['last_complete_before_kill']} | {r['resumed_from']} | {'yes' if r['ok'] else 'NO'} |"
            )
    lines += nodes_report.markdown(s.get("nodes"), meta, HACC_NAMED)
    lines += ["", "## Targets", "", "| target | measured | verdict |", "|---|---|---|"]
    for t in s["targets"]:
        lines.append(f"| {t['target']} | {t['measured']} | {verdict(t['met'])} |")
    return "\n".join(lines) + "\n"


# An end-to-end overhead is the difference of two noisy medians: when the runs without checkpoints
# spread (interquartile range / median) wider than the margin the target allows, the difference says
# nothing about the checkpoints, and the verdict is "not established" whatever its sign. Added after
# the first 7-repeat run of issue 15, whose MR-1S baseline spread over 100 % under load (it only
# withholds verdicts).
def resolvable(row, margin, met):
    if met is None:
        return None
    noise = row.get("spread_no_checkpoint")
    if noise is None or noise > margin:
        return f"not established (baseline spread {pct(noise)})"
    return met


# From the rerun of 26 Nov 04:30 UTC (issue 15; named in the README before it): when the runs with
# and without checkpoints of each implementation run back to back in every repeat (records with
# "schedule": "adjacent"), the verdict rests on the paired per-repeat overheads, which cancel the
# machine's drift that the rule above counts as noise: met when their upper quartile is within the
# target, missed when their lower quartile is beyond it, else "not established"; with fewer than
# MIN_RUNS_FOR_VERDICT pairs, not established. Against MR-2S: met when MR-1S's upper quartile is at
# most half MR-2S's lower quartile, missed when MR-1S's lower quartile is above half MR-2S's upper.
def paired_verdict(row, limit_low, limit_high=None):
    pairs = row.get("paired_overheads") or []
    quartiles = row.get("paired_overhead_quartiles")
    if len(pairs) < MIN_RUNS_FOR_VERDICT or not quartiles:
        return f"not established ({len(pairs)} pairs)"
    q1, q3 = quartiles
    if q3 <= limit_low:
        return True
    if q1 > (limit_high if limit_high is not None else limit_low):
        return False
    return f"not established (paired quartiles {pct(q1)} – {pct(q3)})"


def targets(s):
    out = []
    ms = s.get("mstream")
    if ms:
        r = ms["ratio_to_memory"]
        storage, combined = r.get(MSTREAM_NAMED["storage"]), r.get(MSTREAM_NAMED["combined"])
        lazy = ms.get("ratio_to_memory_lazy") or {}

        def lazy_note(label):
            if not lazy:
                return ""
            return (
                f"; every window written whole first (memory-lazy, the memory window without it: "
                f"{fmt(r.get(LAZY))}× memory; {label} / memory-lazy {fmt(lazy.get(label))}×, not judged)"
            )

        out.append(
            {
                "target": "mSTREAM storage ≥ 0.75× memory (paper ≈ 0.45×), judged on access_style=write_mostly "
                "(the configuration the docs recommend)",
                "measured": f"{fmt(storage)}× write_mostly (not judged: {fmt(r.get('storage'))}× default hints, "
                f"{fmt(r.get('storage (sequential)'))}× sequential); the flush alone allows "
                f"{fmt((ms.get('flush_bound') or {}).get(MSTREAM_NAMED['storage']))}×, the MPI_Win_create path "
                f"alone (memory-create) {fmt(r.get('memory-create'))}×" + lazy_note(MSTREAM_NAMED["storage"]),
                "met": storage >= 0.75 if storage else None,
            }
        )
        out.append(
            {
                "target": "mSTREAM combined 0.5 ≥ 0.9× memory, judged on access_style=write_mostly "
                "(the configuration the docs recommend)",
                "measured": f"{fmt(combined)}× write_mostly (not judged: {fmt(r.get('combined'))}× default hints, "
                f"{fmt(r.get('combined (sequential)'))}× sequential); the flush alone allows "
                f"{fmt((ms.get('flush_bound') or {}).get(MSTREAM_NAMED['combined']))}×, the MPI_Win_create path "
                f"alone (memory-create) {fmt(r.get('memory-create'))}×"
                + lazy_note(MSTREAM_NAMED["combined"]),
                "met": combined >= 0.9 if combined else None,
            }
        )
    rma = s.get("rma")
    if rma:
        o = rma["overall"].get("memory", {})
        oc = rma["overall"].get("memory-create", {})
        out.append(
            {
                "target": "RMA storage within 5% of memory windows (paper ≈ 1%)",
                "measured": f"median ratio {fmt(o.get('median_ratio'), 3)} vs MPI_Win_allocate memory, "
                f"{fmt(oc.get('median_ratio'), 3)} vs MPI_Win_create memory",
                "met": abs(o["median_ratio"] - 1) <= 0.05 if o.get("median_ratio") else None,
            }
        )
    dht = s.get("dht")
    if dht:
        r = dht["ratio_to_memory"]
        out.append(
            {
                "target": "DHT storage ≤ 1.15× memory time (paper 1.20× SSD)",
                "measured": f"median {fmt(r.get('storage'))}×, best run {fmt(dht['best_ratio_to_memory'].get('storage'))}× "
                f"(median vs MPI_Win_create memory: {fmt(dht['ratio_to_memory_create'].get('storage'))}×)",
                "met": r["storage"] <= 1.15 if r.get("storage") else None,
            }
        )
        out.append(
            {
                "target": "DHT combined 0.5 ≤ 1.05× memory time (paper 1.08×)",
                "measured": f"median {fmt(r.get('combined'))}×, best run "
                f"{fmt(dht['best_ratio_to_memory'].get('combined'))}× (median vs MPI_Win_create memory: "
                f"{fmt(dht['ratio_to_memory_create'].get('combined'))}×)",
                "met": r["combined"] <= 1.05 if r.get("combined") else None,
            }
        )
    ooc = s.get("ooc")
    if ooc and ooc["ratios"]:
        for ratio, entry in ooc["ratios"].items():
            v = entry["variants"]
            # Failing cleanly: killed by the group's OOM killer on every run, nothing else affected.
            mem_failed = (
                not v.get("memory", {}).get("completed", True) and v.get("memory", {}).get("oom_kills", 0) > 0
            )
            done = all(v.get(x, {}).get("completed") for x in ("storage", "combined"))
            c = v.get("combined", {}).get("ratio_to_projection")
            out.append(
                {
                    "target": f"Out of core at {ratio}× the limit: memory fails cleanly, storage and combined complete",
                    "measured": f"memory {'failed (OOM in the cgroup)' if mem_failed else 'completed'}, "
                    f"storage/combined {'completed' if done else 'did not both complete'}",
                    "met": mem_failed and done,
                }
            )
            runs = min(entry.get("runs", {}).get(x, 1) for x in ("combined", "projection"))
            out.append(
                {
                    "target": f"Out of core at {ratio}×: combined ≤ 1.3× in-memory projection (paper 1.13–1.36×; "
                    f"storage_alloc_factor {fmt(v.get('combined', {}).get('factor'), 3)})",
                    "measured": f"{fmt(c)}× (storage {fmt(v.get('storage', {}).get('ratio_to_projection'))}×), "
                    f"{runs} run(s) each",
                    "met": (c <= 1.3 if c else None) if runs >= MIN_RUNS_FOR_VERDICT else "not established",
                    "runs": runs,
                }
            )
    hacc = s.get("hacc")
    if hacc and HACC_NAMED in hacc["table"]:
        row = hacc["table"][HACC_NAMED]
        bounds = s.get("hacc_bounds") or {}
        ck, rs = row["checkpoint_to_best_mpiio"], row["restart_to_best_mpiio"]
        out.append(
            {
                "target": "HACC checkpoint through a storage window ≤ 1.0× the better of independent and "
                "collective MPI-IO (write_once)",
                "measured": f"{fmt(ck, 2)}× ({fmt(row['checkpoint_seconds'], 3)} s vs "
                f"{fmt(hacc['best_mpiio_checkpoint_seconds'], 3)} s; disk alone {fmt(bounds.get('write_seconds'), 3)} s, "
                f"strata at {fmt((bounds.get('to_disk') or {}).get(HACC_NAMED, {}).get('checkpoint'), 2)}× it)",
                "met": ck <= 1.0 if ck is not None else None,
            }
        )
        out.append(
            {
                "target": "HACC restart through a storage window ≤ 1.0× MPI-IO's read time (read_once, cold cache)",
                "measured": f"{fmt(rs, 2)}× ({fmt(row['restart_seconds'], 3)} s vs "
                f"{fmt(hacc['best_mpiio_restart_seconds'], 3)} s; disk alone {fmt(bounds.get('read_seconds'), 3)} s, "
                f"strata at {fmt((bounds.get('to_disk') or {}).get(HACC_NAMED, {}).get('restart'), 2)}× it)",
                "met": rs <= 1.0 if rs is not None else None,
            }
        )
    mr = s.get("mapreduce")
    if mr:
        t = mr["table"]
        judged = mapreduce_judged(t)
        snap = t.get(judged, {}).get("overhead_end_to_end")
        inplace = t.get("MR-1S in place", {}).get("overhead_end_to_end")
        two = t.get("MR-2S", {}).get("overhead_end_to_end")
        two_c = t.get("MR-2S (combiner)", {}).get("overhead_end_to_end")
        kind = judged.removeprefix("MR-1S ")
        blocking = (
            f"; blocking snapshot {pct(t['MR-1S snapshot'].get('overhead_end_to_end'))} "
            f"(paired {pct(t['MR-1S snapshot'].get('paired_overhead'))})"
            if judged != "MR-1S snapshot" and "MR-1S snapshot" in t
            else ""
        )

        snap_row, two_row = t.get(judged, {}), t.get("MR-2S", {})
        paired_rule = mr.get("schedule") == "adjacent"
        quart = snap_row.get("paired_overhead_quartiles") or []
        paired_text = (
            f"; paired per repeat {pct(snap_row.get('paired_overhead'))} "
            f"(quartiles {' – '.join(pct(q) for q in quart) or '—'})"
        )
        out.append(
            {
                "target": "MapReduce MR-1S checkpoint overhead ≤ 5% end to end against the same storage window "
                f"without checkpoints ({kind}, written behind; paper 3.8% weak scaling)",
                "measured": f"{pct(snap)} {kind} ({pct(snap_row.get('overhead_measured'))} "
                f"inside checkpoints){paired_text}{blocking}; in place {pct(inplace)}",
                "met": paired_verdict(snap_row, 0.05)
                if paired_rule
                else resolvable(snap_row, 0.05, snap <= 0.05 if snap is not None else None),
            }
        )
        out.append(
            {
                "target": f"MapReduce MR-1S overhead ≤ 0.5× collective MPI-IO's (MR-2S, end to end; {kind}; "
                "paper 58.6%)",
                "measured": f"MR-2S {pct(two)} ({fmt(snap / two if snap is not None and snap >= 0 and two and two > 0 else None, 2)}×), "
                f"MR-2S with combiner {pct(two_c)} "
                f"({fmt(snap / two_c if snap is not None and snap >= 0 and two_c and two_c > 0 else None, 2)}×); "
                f"paired per repeat: MR-2S {pct(two_row.get('paired_overhead'))} (quartiles "
                f"{' – '.join(pct(q) for q in two_row.get('paired_overhead_quartiles') or []) or '—'})",
                "met": (
                    paired_verdict(
                        snap_row,
                        0.5 * (two_row.get("paired_overhead_quartiles") or [0, 0])[0],
                        0.5 * (two_row.get("paired_overhead_quartiles") or [0, 0])[1],
                    )
                    if paired_rule
                    else resolvable(
                        snap_row,
                        0.05,
                        (snap <= 0.5 * two) if snap is not None and two is not None else None,
                    )
                ),
            }
        )
    crash = s.get("crash")
    if crash:
        out.append(
            {
                "target": "Crash: restart resumes from the last completed checkpoint with verified data",
                "measured": f"{sum(r['ok'] for r in crash['runs'])} of {len(crash['runs'])} kills",
                "met": crash["all_ok"],
            }
        )
    return out


def recorded_machine(raw: Path) -> str:
    """The machine line recorded with the raw records (machine.txt, or a results.json's summary)."""
    if raw.is_file():
        return json.loads(raw.read_text())["summary"]["machine"]
    recorded = raw / "machine.txt"
    return recorded.read_text().strip() if recorded.exists() else machine_line()


def unpack(results: Path, raw: Path) -> None:
    """results.json's records, metadata and machine line as the raw directory they were made from, for a run
    of some applications that keeps the others' records (bench/storage-windows/run)."""
    records, meta = load(results)
    raw.mkdir(parents=True, exist_ok=True)
    for app, rows in records.items():
        (raw / f"{app}.jsonl").write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in rows))
    for app, m in meta.items():
        (raw / f"{app}.meta.json").write_text(json.dumps(m, separators=(",", ":")) + "\n")
    (raw / "machine.txt").write_text(recorded_machine(results) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("raw", type=Path, nargs="?")
    parser.add_argument("--out-dir", type=Path)
    parser.add_argument(
        "--machine-line", action="store_true", help="print this machine's description and exit"
    )
    parser.add_argument(
        "--unpack",
        nargs=2,
        type=Path,
        metavar=("RESULTS_JSON", "RAW_DIR"),
        help="write a results.json's records back into RAW_DIR's files and exit",
    )
    args = parser.parse_args()
    if args.machine_line:
        print(machine_line())
        return
    if args.unpack:
        unpack(args.unpack[0], args.unpack[1])
        return
    if args.raw is None or args.out_dir is None:
        parser.error("RAW and --out-dir are required")
    records, meta = load(args.raw)
    summary = {"machine": recorded_machine(args.raw)}
    builders = {
        "limits": limits_summary,
        "mstream": mstream_summary,
        "rma": rma_summary,
        "dht": dht_summary,
        "ooc": ooc_summary,
        "hacc": hacc_summary,
        "mapreduce": mapreduce_summary,
        "crash": crash_summary,
    }
    for app, build in builders.items():
        if records.get(app):
            summary[app] = build(records[app])
    summary["hacc_bounds"] = hacc_bounds(summary.get("hacc"), summary.get("limits"))
    nodes = nodes_report.summary(records, rma_summary, dht_summary, hacc_summary)
    if nodes:  # 4 and 8 ranks on 2 emulated nodes (run --nodes 2): rows of their own, after the others
        summary["nodes"] = nodes
    summary["targets"] = targets(summary) + nodes_report.targets(nodes, HACC_NAMED)
    for t in summary["targets"]:
        app = t.get("app") or TARGET_APP.get(t["target"].split()[0])
        runs = meta.get(app, {}).get("repeats") if app else None
        if runs is not None and runs < MIN_RUNS_FOR_VERDICT and t["met"] is not None:
            t["measured"] += f" ({runs} runs)"
            t["met"] = "not established"
    args.out_dir.mkdir(parents=True, exist_ok=True)
    if "mstream" in summary:
        plot_mstream(summary["mstream"], args.out_dir)
    if "rma" in summary:
        plot_rma(summary["rma"], args.out_dir)
    if "dht" in summary and "ooc" in summary:
        plot_dht(summary["dht"], summary["ooc"], args.out_dir)
    if "hacc" in summary and "mapreduce" in summary:
        plot_checkpoint(summary["hacc"], summary["mapreduce"], args.out_dir)
    doc = {
        "summary": summary,
        "meta": meta,
        "records": records,
        "targets": shared_rows(summary, paired_verdict),
    }
    (args.out_dir / "results.json").write_text(json.dumps(doc, indent=1) + "\n")
    (args.out_dir / "results.md").write_text(markdown(summary, meta))
    print(f"wrote {args.out_dir}/results.json, results.md and plots")


if __name__ == "__main__":
    main()
