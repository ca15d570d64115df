# SPDX-License-Identifier: MIT
"""Runs the containers benchmark and writes results.json (bench/containers/run).

Paper 001 Fig. 7: the throughput of one workflow whose tasks are plain
processes against the same workflow whose tasks each run in a crun container
(`strata container run`, its own pid/mount/uts/ipc namespaces), sharing
segments through the segment directory bound into every container. Shapes:
a pipeline of N tasks (source, N-2 relays, sink) and a scatter-gather of
width W (source, W workers, sink); each message is BYTES of uint64 words that
every task reads (and relays copy), and the sink checks every word.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

MB = 1_000_000


def stage_commands(
    shape: str, n: int, segment: str, seg_bytes: int, iterations: int, size: int
) -> list[list[str]]:
    """The stage argument lists of one workflow, sink first (it waits for the others)."""
    common = [segment, str(seg_bytes), str(iterations), str(size)]
    tasks = str(n if shape == "pipeline" else n + 2)
    if shape == "pipeline":
        stages = [common + [f"p{n - 2}", "1", "1", "-", "0"]]  # sink
        stages += [common + [f"p{k - 1}", "1", "1", f"p{k}", "1"] for k in range(n - 2, 0, -1)]  # relays
        stages.append(common + ["-", "0", "1", "p0", "1"])  # source
    else:
        stages = [common + ["gather", "1", str(n), "-", "0"]]  # sink: n messages per iteration
        stages += [common + ["scatter", str(n), "1", "gather", "1"] for _ in range(n)]  # workers
        stages.append(common + ["-", "0", "1", "scatter", str(n)])  # source
    return [s + [tasks] for s in stages]


def run_once(args, mode: str, shape: str, n: int, iterations: int, size: int, index: int) -> dict:
    seg_dir = Path(tempfile.mkdtemp(prefix="strata-bench-containers-", dir=args.shm_base))
    try:
        ports = n if shape == "pipeline" else 2
        seg_bytes = ports * 4 * (size + 4096) + (32 << 20)
        segment = f"bench-containers-{os.getpid()}-{index}"
        stage = args.bin_dir / "bench_containers_stage"
        procs = []
        for stage_args in stage_commands(shape, n, segment, seg_bytes, iterations, size):
            if mode == "process":
                cmd = [str(stage)] + stage_args
                env = dict(os.environ, STRATA_SHM_DIR=str(seg_dir))
            else:
                inside = Path("/opt/strata") / stage.relative_to(args.strata_root)
                cmd = [
                    str(args.bin_dir / "strata"),
                    "container",
                    "run",
                    "--strata-root",
                    str(args.strata_root),
                    "--segment-dir",
                    str(seg_dir),
                    "--",
                    str(inside),
                ] + stage_args
                env = dict(os.environ)
            procs.append(
                subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            )
        outputs = [p.communicate(timeout=900) for p in procs]
        for p, (out, err) in zip(procs, outputs):
            if p.returncode != 0:
                raise RuntimeError(f"{mode} {shape} {n}: a task failed ({p.returncode}): {err}{out}")
        sink = json.loads(outputs[0][0])
        per_iteration = 1 if shape == "pipeline" else n
        expected = per_iteration * iterations * (iterations + 1) // 2
        if sink["value_sum"] != expected or sink["messages"] != per_iteration * iterations:
            raise RuntimeError(f"{mode} {shape} {n}: the sink got {sink}, expected value_sum {expected}")
        return {"throughput_mb_s": sink["bytes"] / sink["seconds"] / MB, "seconds": sink["seconds"]}
    finally:
        shutil.rmtree(seg_dir, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--bin-dir", type=Path, required=True)
    ap.add_argument("--strata-root", type=Path, required=True, help="the tree bound at /opt/strata")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--size", type=int, default=1 << 20, help="bytes per message")
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--lengths", default="2,3,4,5,6,7,8,9", help="pipeline lengths (tasks)")
    ap.add_argument("--widths", default="1,2,3,4,5,6,7", help="scatter-gather widths (workers)")
    ap.add_argument("--shm-base", default="/dev/shm", help="where the segment directory is made")
    ap.add_argument("--note", default="", help="recorded in the report (e.g. exploratory, machine loaded)")
    args = ap.parse_args()
    args.strata_root = args.strata_root.resolve()
    args.bin_dir = args.bin_dir.resolve()
    configs = [("pipeline", int(n)) for n in args.lengths.split(",")]
    configs += [("scatter-gather", int(w)) for w in args.widths.split(",")]
    rows = []
    index = 0
    for shape, n in configs:
        # Processes and containers alternate, repeat by repeat: a drift of the machine's load
        # falls on both sides of the ratio alike.
        runs_of = {"process": [], "container": []}
        for _ in range(args.repeats):
            for mode in ("process", "container"):
                index += 1
                runs_of[mode].append(run_once(args, mode, shape, n, args.iterations, args.size, index))
        for mode in ("process", "container"):
            runs = runs_of[mode]
            rows.append(
                {
                    "shape": shape,
                    "n": n,
                    "mode": mode,
                    "repeats": args.repeats,
                    "throughput_mb_s": statistics.median(r["throughput_mb_s"] for r in runs),
                    "runs_mb_s": [r["throughput_mb_s"] for r in runs],
                }
            )
            print(f"{shape} {n} {mode}: {rows[-1]['throughput_mb_s']:.1f} MB/s", file=sys.stderr)
    report = {
        "suite": "containers",
        "command": os.environ.get("STRATA_BENCH_COMMAND", " ".join(sys.argv)),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "kernel": platform.release()},
        "size": args.size,
        "iterations": args.iterations,
        "note": args.note,
        "rows": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
