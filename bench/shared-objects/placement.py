# SPDX-License-Identifier: MIT
"""The placement experiment of bench/shared-objects/run --placement (issue 27, docs/workflow.md "Placement").

The same pipeline(4) and scatter-gather(6) workflows four ways, each run inside apps/video/emulate (2
emulated nodes, links unshaped) so that every configuration pays the same launcher: all tasks on one node
(shm), split over the 2 nodes in blocks (hybrid: shm within a node, MPI across), the same split with the
edges across nodes through the DSM (hybrid DSM: `strata run --across dsm`, reported, no target), and split
with every edge MPI (all-MPI). The split leaves at least half of the edges within a node (pipeline 2 of 3,
scatter-gather 4 of 8). Writes the rows into results.json's "placement" (the rest of the file is kept).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench_progress import step  # noqa: E402

MB = 1_000_000
EMULATE = Path(__file__).resolve().parents[2] / "apps" / "video" / "emulate"
# (name, method, nodes, how edges across nodes run)
PLACEMENTS = [
    ("one node", "shm", "n0", "mpi"),
    ("hybrid", "shm", "n0,n1", "mpi"),
    ("hybrid DSM", "shm", "n0,n1", "dsm"),
    ("all-MPI", "mpi", "n0,n1", "mpi"),
]
SHAPES = [("pipeline", 4), ("scatter-gather", 6)]


def emulated_run(
    bin_dir: Path, shape: str, tasks: int, method: str, nodes: str, across: str, size: int, iterations: int
):
    cmd = [
        str(EMULATE), "--nodes", "n0=none,n1=none", "--rate", "none", "--",
        str(bin_dir / "strata"), "run", "--json", "-q", "--shape", shape, "--tasks", str(tasks),
        "--method", method, "--data-size", str(size), "--iterations", str(iterations), "--nodes", nodes,
    ]  # fmt: skip
    if "," in nodes:
        cmd += ["--across", across]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {done.stdout}{done.stderr}")
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError as e:
        raise RuntimeError(f"{' '.join(cmd)}: not a report ({e}): {done.stdout!r}{done.stderr}") from e
    if report["checksum_errors"] != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {report['checksum_errors']} checksum errors")
    return report


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin-dir", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--quick", action="store_true", help="tiny sizes: checks the harness, measures nothing")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    size, iterations = (64 * 1024, 10) if args.quick else (10 * MB, 100)
    repeats = 1 if args.quick else args.repeats
    doc = json.loads(args.out.read_text()) if args.out.exists() else {}
    section: dict = {
        "command": os.environ.get("STRATA_BENCH_COMMAND", "bench/shared-objects/run --placement"),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "quick": args.quick,
        "repeats": repeats,
        "data_size": size,
        "iterations": iterations,
        "load_average_at_start": os.getloadavg(),
        "rows": [],
    }
    if os.geteuid() != 0 or not EMULATE.exists():
        section["not_run"] = "needs root and apps/video/emulate (emulated nodes)"
    else:
        total = len(SHAPES) * len(PLACEMENTS)
        for i, ((shape, tasks), (name, method, nodes, across)) in enumerate(
            (s, p) for s in SHAPES for p in PLACEMENTS
        ):
            step(i + 1, total, f"placement: {shape}({tasks}) {name}")
            runs = [
                emulated_run(args.bin_dir, shape, tasks, method, nodes, across, size, iterations)
                for _ in range(repeats)
            ]
            edges = runs[0]["edges"]
            row = {
                "shape": shape,
                "tasks": tasks,
                "placement": name,
                "method": method,
                "nodes": nodes,
                "across": across,
                "edges": len(edges),
                "local_edges": sum(1 for e in edges if not e["across_nodes"]),
                "edge_methods": [e["method"] for e in edges],
                "iterations_per_s": statistics.median(r["iterations_per_s"] for r in runs),
                "throughput_mb_s": statistics.median(r["throughput_mb_s"] for r in runs),
                "all_iterations_per_s": [r["iterations_per_s"] for r in runs],
            }
            section["rows"].append(row)
            print(f"  {shape:<15} n={tasks} {name:<9} {row['iterations_per_s']:8.1f} it/s", flush=True)
    section["load_average_at_end"] = os.getloadavg()
    doc["placement"] = section
    args.out.write_text(json.dumps(doc, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
