# SPDX-License-Identifier: MIT
"""Runs bench/ocr-dist's experiments (see run) and writes results.json and raw/ to --out.

Every OCR program runs through `strata ocr -n N`; every MPI baseline through the same mpiexec line
(`strata ocr`'s: one fork-launched Hydra proxy per rank, or the emulated nodes' launcher), so both
move their bytes over the same MPI transport.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench_progress import step  # noqa: E402

SIZES = {
    "small": {
        "roundtrip": {"iterations": 200, "bytes": [64]},
        "migration": {"iterations": 10, "bytes": [1 << 20]},
        "stencil": {"n": 256, "q": 4, "steps": 20},
        "repeats": 1,
    },
    "full": {
        "roundtrip": {"iterations": 2000, "bytes": [64, 4096]},
        "migration": {"iterations": 40, "bytes": [1 << 20, 4 << 20, 16 << 20]},
        "stencil": {"n": 2048, "q": 4, "steps": 40},
        "repeats": 5,
    },
}
BW_BYTES_PER_RUN = 256 << 20  # osu_bw's window of 64 messages, repeated until this much moved


class Runner:
    def __init__(self, args: argparse.Namespace, raw: Path):
        self.bin = Path(args.bin)
        self.nodes = args.nodes
        self.emulate = args.emulate
        self.raw = raw
        self.count = 0

    def hosts(self, ranks: int) -> str:
        if self.nodes == 2:
            per = max(1, ranks // 2)
            return f"n0:{per},n1:{per}" if ranks > 1 else "n0"
        return ",".join(f"127.0.{(r + 1) // 250}.{(r + 1) % 250 + 1}" for r in range(ranks))

    def launcher(self, ranks: int) -> str:
        if self.nodes == 2:
            return f"$STRATA_EMU_MPIEXEC -hosts {self.hosts(ranks)}"
        return f"mpiexec -launcher fork -hosts {self.hosts(ranks)} -ppn 1"

    def ocr(self, ranks: int, program: str, *args: str) -> str:
        line = (
            f"{shlex.quote(str(self.bin / 'strata'))} ocr -n {ranks} {shlex.quote(str(self.bin / program))}"
        )
        line += "".join(f" {shlex.quote(a)}" for a in args)
        if ranks > 1:
            line = f'STRATA_MPIEXEC="{self.launcher(ranks)}" {line}'
        return f"STRATA_WORKERS=1 {line}"

    def mpi(self, ranks: int, program: str, *args: str) -> str:
        line = (
            f"{self.launcher(ranks)} -disable-auto-cleanup -n {ranks} {shlex.quote(str(self.bin / program))}"
        )
        return line + "".join(f" {shlex.quote(a)}" for a in args)

    def run(self, command: str, key: str) -> str:
        """Runs one shell command line (under the emulation with --nodes 2); its output goes to raw/."""
        self.count += 1
        argv = ["sh", "-c", command]
        if self.nodes == 2:
            argv = [self.emulate, "--nodes", "n0=none,n1=none", "--rate", "none", "--", *argv]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=900)
        if self.nodes == 2 and "emulate: check failed" in done.stderr:
            # The emulation's own TCP check failed before the command ran: build it once more.
            done = subprocess.run(argv, capture_output=True, text=True, timeout=900)
        name = f"{self.count:03d}-{key}.txt"
        (self.raw / name).write_text(f"$ {command}\n{done.stdout}{done.stderr}exit {done.returncode}\n")
        if done.returncode != 0:
            sys.exit(f"ocr-dist: {command}: exit {done.returncode} (raw/{name}):\n{done.stdout}{done.stderr}")
        return done.stdout


def value(output: str, key: str) -> float:
    found = re.search(rf"{key}\s+([0-9.]+)", output)
    if not found:
        sys.exit(f"ocr-dist: no '{key}' in:\n{output}")
    return float(found.group(1))


def roundtrip(r: Runner, size: dict, repeats: int) -> list[dict]:
    rows = []
    for nbytes in size["bytes"]:
        ocr, mpi = [], []
        for _ in range(repeats):
            it = str(size["iterations"])
            ocr.append(
                value(
                    r.run(r.ocr(2, "ocr_dist_bench_roundtrip", it, str(nbytes)), "roundtrip"), "roundtrip_us"
                )
            )
            mpi.append(
                value(
                    r.run(r.mpi(2, "ocr_dist_bench_mpi", "pingpong", it, str(nbytes)), "pingpong"),
                    "pingpong_us",
                )
            )
        rows.append({"bytes": nbytes, "ocr_us": ocr, "mpi_us": mpi,
                     "ocr_us_median": statistics.median(ocr), "mpi_us_median": statistics.median(mpi)})  # fmt: skip
    return rows


def migration(r: Runner, size: dict, repeats: int) -> list[dict]:
    rows = []
    for nbytes in size["bytes"]:
        ocr, mpi = [], []
        bw_iterations = str(max(4, BW_BYTES_PER_RUN // (64 * nbytes)))
        for _ in range(repeats):
            it = str(size["iterations"])
            ocr.append(
                value(r.run(r.ocr(2, "ocr_dist_bench_migrate", it, str(nbytes)), "migrate"), "migration_mbps")
            )
            mpi.append(
                value(
                    r.run(r.mpi(2, "ocr_dist_bench_mpi", "bw", bw_iterations, str(nbytes)), "bw"), "bw_mbps"
                )
            )
        rows.append({"bytes": nbytes, "ocr_mbps": ocr, "mpi_mbps": mpi,
                     "ocr_mbps_median": statistics.median(ocr), "mpi_mbps_median": statistics.median(mpi)})  # fmt: skip
    return rows


def stencil(r: Runner, size: dict, repeats: int, ranks: list[int], work: Path) -> list[dict]:
    import numpy as np

    n, q, steps = size["n"], size["q"], size["steps"]
    grid = np.random.default_rng(26).standard_normal((n, n))
    source = work / "in.bin"
    source.write_bytes(grid.astype("<f8").tobytes())
    rows = []
    for count in ranks:
        ocr, mpi = [], []
        args = [str(n), str(q), str(steps), str(source)]
        for _ in range(repeats):
            out_ocr, out_mpi = work / f"ocr-{count}.bin", work / f"mpi-{count}.bin"
            line = r.run(r.ocr(count, "ocr_dist_bench_stencil", *args, str(out_ocr)), f"stencil-ocr-{count}")
            ocr.append(value(line, "seconds"))
            line = r.run(
                r.mpi(count, "ocr_dist_bench_mpi_stencil", *args, str(out_mpi)), f"stencil-mpi-{count}"
            )
            mpi.append(value(line, "seconds"))
            # Both compute the same grid, bit for bit (same kernel, same order of operations).
            if out_ocr.read_bytes() != out_mpi.read_bytes():
                sys.exit(f"ocr-dist: the OCR and MPI stencils on {count} ranks computed different grids")
        points = float(n * n * steps)
        rows.append({"ranks": count, "ocr_seconds": ocr, "mpi_seconds": mpi,
                     "ocr_mpoints_per_s": points / statistics.median(ocr) / 1e6,
                     "mpi_mpoints_per_s": points / statistics.median(mpi) / 1e6})  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench/ocr-dist/run", description=__doc__)
    parser.add_argument("--bin", required=True)
    parser.add_argument("--emulate", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--size", choices=sorted(SIZES), default="full")
    parser.add_argument("--repeats", type=int)
    parser.add_argument("--ranks", default="1,2,4")
    parser.add_argument("--nodes", type=int, choices=[1, 2], default=1)
    args = parser.parse_args()
    try:
        ranks = [int(x) for x in args.ranks.split(",")]
    except ValueError:
        parser.exit(2, f"bench/ocr-dist/run: --ranks={args.ranks}: expected counts like 1,2,4\n")
    size = SIZES[args.size]
    if not ranks or any(x < 1 or (size["stencil"]["q"] ** 2) % x for x in ranks):
        parser.exit(2, f"bench/ocr-dist/run: --ranks={args.ranks}: each count must divide the 16 tiles\n")
    if args.nodes == 2 and os.geteuid() != 0:
        parser.exit(2, "bench/ocr-dist/run: --nodes 2 needs root (apps/video/emulate)\n")
    repeats = args.repeats or size["repeats"]
    out = Path(args.out)
    raw = out / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    for old in raw.glob("*.txt"):
        old.unlink()
    r = Runner(args, raw)
    with tempfile.TemporaryDirectory(prefix="strata-ocr-dist-") as work:
        step(1, 3, "round trips")
        trips = roundtrip(r, size["roundtrip"], repeats)
        step(2, 3, "block migration")
        moves = migration(r, size["migration"], repeats)
        step(3, 3, "stencil")
        grids = stencil(r, size["stencil"], repeats, ranks, Path(work))
    doc = {
        "suite": "ocr-dist",
        "command": os.environ.get("STRATA_BENCH_COMMAND", "bench/ocr-dist/run"),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": {"cpus": os.cpu_count(), "kernel": platform.release(), "load": os.getloadavg()},
        "size": args.size,
        "sizes": size,
        "repeats": repeats,
        "nodes": args.nodes,
        "workers_per_rank": 1,
        "roundtrip": trips,
        "migration": moves,
        "stencil": grids,
    }
    (out / "results.json").write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
