#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Kills a checkpointing job at random moments and checks every restart (docs/mpi-storage-windows.md
"Durability").

The job is sw-crash (crash.c): each rank checkpoints its state into one of two slots of a storage
window (data, MPI_Win_sync, header, MPI_Win_sync, barrier) and rank 0 prints "checkpoint S
complete" after the barrier. Each round starts the job on the files the last round left, waits a
random time, SIGKILLs a random rank, optionally drops the page cache, and the next round's start is
the restart. A restart must

  - read the same valid slots through O_DIRECT as through the window (--check-direct): what a
    checkpoint's MPI_Win_sync made durable is on the device, not only in the page cache;
  - resume from the last checkpoint reported complete, or the next one (complete, but killed before
    rank 0 printed it), never an older one: a completed checkpoint is never lost or torn;
  - find every word of that step's state bit-exact (sw-crash checks them and fails otherwise).

A job that reaches its last step starts over on empty files. Window kinds alternate between the
kernel's write-back (the default) and direct write-back (access_style=write_once, the HACC-IO
checkpoint's hint), whose stores live in anonymous memory until MPI_Win_sync writes them.

Usage: kill_checkpoints.py --program sw-crash [--kills 40] [--ranks 2] [--seed N] [--drop-caches]
                           [--kinds kernel,direct] [--sync on_sync] [--json FILE] [--dir DIR]
Exit 0 when every restart passed; the summary (and --json) counts kills and restarts per kind.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KINDS = {"kernel": [], "direct": ["--access-style", "write_once"]}
STEPS = 100000  # more than any round reaches: the kill ends the job
SIZE = "1M"


def start(args, directory: Path, kind: str) -> subprocess.Popen:
    cmd = ["mpiexec", "-n", str(args.ranks), args.program, "--dir", str(directory), "--steps", str(STEPS),
           "--size", SIZE, "--check-direct", "--sync", args.sync, *KINDS[kind]]  # fmt: skip
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def wait_for_line(job: subprocess.Popen, pattern: str, deadline: float) -> tuple[str, str]:
    """Reads the job's output until a line matches; returns (match group 1, text so far)."""
    seen = ""
    while time.monotonic() < deadline:
        line = job.stdout.readline()
        if not line:
            break
        seen += line
        m = re.match(pattern, line)
        if m:
            return m.group(1), seen
    raise RuntimeError(f"no line matching {pattern!r}; the job said:\n{seen}")


def pid_of(directory: Path, rank: int, deadline: float) -> int:
    path = directory / f"pid-{rank}"
    while time.monotonic() < deadline:
        text = path.read_text() if path.exists() else ""
        if text.endswith("\n"):
            return int(text)
        time.sleep(0.01)
    raise RuntimeError(f"rank {rank} wrote no pid into {path}")


def drop_caches() -> None:
    os.sync()  # so that only clean pages are left: drop_caches then empties the cache entirely
    Path("/proc/sys/vm/drop_caches").write_text("1\n")


def one_round(args, rng: random.Random, directory: Path, kind: str, expected: tuple[int, int] | None) -> dict:
    """Starts (restarts) the job, checks where it resumed, kills it; returns the round's record."""
    job = start(args, directory, kind)
    try:
        try:
            resumed, text = wait_for_line(job, r"resumed from (\d+)$", time.monotonic() + 60)
        except RuntimeError as e:  # the restart itself failed: a torn or lost slot, values that differ
            job.kill()
            rest, _ = job.communicate(timeout=60)
            return {"kind": kind, "resumed_from": -1, "expected": list(expected) if expected else [0, 0],
                    "restart_ok": False, "killed_rank": None, "delay_s": 0, "last_complete_before_kill": -1,
                    "job_output": (str(e) + rest)[-3000:]}  # fmt: skip
        resumed = int(resumed)
        ok = expected is None or resumed in expected
        delay = rng.uniform(0.05, args.max_delay)
        victim = rng.randrange(args.ranks)
        pid = pid_of(directory, victim, time.monotonic() + 30)
        time.sleep(delay)
        os.kill(pid, signal.SIGKILL)
        rest, _ = job.communicate(timeout=60)
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()
    text += rest
    completes = [int(s) for s in re.findall(r"^checkpoint (\d+) complete$", text, re.MULTILINE)]
    last = completes[-1] if completes else resumed
    return {
        "kind": kind,
        "resumed_from": resumed,
        "expected": list(expected) if expected else None,
        "restart_ok": ok,
        "killed_rank": victim,
        "delay_s": round(delay, 4),
        "last_complete_before_kill": last,
        "job_output": "" if ok else text[-2000:],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--program", required=True)
    parser.add_argument("--kills", type=int, default=40)
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--max-delay", type=float, default=1.0, help="longest wait before a kill (s)")
    parser.add_argument(
        "--drop-caches", action="store_true", help="drop the page cache after every kill (root)"
    )
    parser.add_argument(
        "--sync",
        default="on_sync",
        help="storage_alloc_sync; on_free (MPI_Win_sync does not write back) must fail the check",
    )
    parser.add_argument("--kinds", default="kernel,direct", help="window kinds, in turn: kernel, direct")
    parser.add_argument("--json")
    parser.add_argument("--dir", help="where the checkpoint files go (default: a new directory in /var/tmp)")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 30)
    rng = random.Random(seed)
    kinds = args.kinds.split(",")
    if not kinds or any(k not in KINDS for k in kinds):
        parser.error(f"--kinds={args.kinds}: expected a comma-separated list of {', '.join(KINDS)}")
    base = Path(tempfile.mkdtemp(prefix="strata-kill-ckpt-", dir=args.dir or "/var/tmp"))
    rounds: list[dict] = []
    try:
        for kind in kinds:
            (base / kind).mkdir()
        expected: dict[str, tuple[int, int] | None] = {kind: None for kind in kinds}
        for k in range(args.kills + len(kinds)):  # one last start per kind is a restart without a kill
            kind = kinds[k % len(kinds)]
            record = one_round(args, rng, base / kind, kind, expected[kind])
            if k >= args.kills:
                record["killed_rank"] = None  # the final restarts' kills only end the run
            rounds.append(record)
            if not record["restart_ok"]:
                print(f"round {k} ({kind}): resumed from {record['resumed_from']}, expected one of "
                      f"{record['expected']}\n{record['job_output']}", file=sys.stderr)  # fmt: skip
                break
            last = record["last_complete_before_kill"]
            expected[kind] = (last, last + 1)
            if args.drop_caches:
                drop_caches()
    finally:
        shutil.rmtree(base, ignore_errors=True)
    kills = [r for r in rounds if r["killed_rank"] is not None]
    restarts = [r for r in rounds if r["expected"] is not None]
    summary = {
        "app": "checkpoint-kills",
        "seed": seed,
        "ranks": args.ranks,
        "state_bytes_per_rank": 1 << 20,
        "drop_caches": args.drop_caches,
        "sync": args.sync,
        "kills": len(kills),
        "restarts_checked": len(restarts),
        "restarts_ok": sum(r["restart_ok"] for r in restarts),
        "resumed_from_last_complete": sum(r["resumed_from"] == r["expected"][0] for r in restarts),
        "resumed_from_next": sum(r["resumed_from"] == r["expected"][1] for r in restarts),
        "per_kind": {
            kind: {
                "kills": sum(r["kind"] == kind for r in kills),
                "restarts_ok": sum(r["kind"] == kind and r["restart_ok"] for r in restarts),
            }
            for kind in kinds
        },  # fmt: skip
        "rounds": [{k: v for k, v in r.items() if k != "job_output"} for r in rounds],
    }
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=1) + "\n")
    ok = len(restarts) > 0 and summary["restarts_ok"] == len(restarts) and len(kills) >= args.kills
    print(f"kill_checkpoints: seed {seed}: {len(kills)} kills, {summary['restarts_ok']} of {len(restarts)} restarts "
          f"resumed from the last complete checkpoint ({summary['resumed_from_last_complete']}) or the next one "
          f"({summary['resumed_from_next']}), every value verified{', page cache dropped' if args.drop_caches else ''}: "
          f"{'ok' if ok else 'FAILED'}")  # fmt: skip
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
