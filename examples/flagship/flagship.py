# SPDX-License-Identifier: MIT
"""Runs the flagship workflow (docs/getting-started/flagship.md) and writes its report.

    flagship.py --out DIR [--n 64] [--q 4] [--steps 120] [--k 20] [--m 10] [--kill-at STEP]
                [--bin DIR]

Under apps/video/emulate (STRATA_EMU_MPIEXEC set) the heat program's 2 ranks run on the
emulated nodes n0 and n1 and the analysis on n0, beside rank 0; elsewhere both ranks run here.
With --kill-at S the job is SIGKILLed once the checkpoint of step S is complete and run again:
it continues from the last complete checkpoint. DIR receives field.bin, ckpt/, heat.mp4,
stats.json, heat.png, report.json and report.md. Exit 0, or 1 naming the part that failed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PYTHON = sys.executable


class Failed(Exception):
    """A part of the workflow failed; the message names it."""


def default_bin() -> Path:
    built = HERE.parent.parent / "build" / "default" / "bin"
    return built if (built / "flagship_heat").exists() else Path(sys.prefix) / "bin"


def on_node(node: str, command: list[str]) -> list[str]:
    """`command` on emulated node `node` (its namespace and cgroup), or here without emulation."""
    launcher = os.environ.get("STRATA_EMU_LAUNCHER")
    return [launcher, node, shlex.join(command)] if launcher else command


def job_env() -> dict[str, str]:
    env = dict(os.environ)
    if "STRATA_EMU_MPIEXEC" in env:
        env["STRATA_MPIEXEC"] = env["STRATA_EMU_MPIEXEC"] + " -hosts n0,n1"
    return env


def start_analysis(args: argparse.Namespace, segment: str, frames: int) -> subprocess.Popen:
    command = [PYTHON, str(HERE / "analysis.py"), "--segment", segment, "--frames", str(frames),
               "--n", str(args.n), "--out", str(args.out)]  # fmt: skip
    analysis = subprocess.Popen(on_node("n0", command), stdout=subprocess.PIPE, text=True)
    if analysis.stdout.readline().strip() != "analysis: ready":
        analysis.kill()
        raise Failed(f"analysis: did not start (exit {analysis.wait()})")
    return analysis


def heat_command(args: argparse.Namespace, segment: str) -> list[str]:
    return [str(args.bin / "strata"), "ocr", "-n", "2", "--external-config", str(HERE / "flagship.toml"),
            str(args.bin / "flagship_heat"), str(args.n), str(args.q), str(args.steps), str(args.k),
            str(args.m), str(args.out), segment]  # fmt: skip


def checkpoint_complete(args: argparse.Namespace, step: int) -> bool:
    tile = (args.n // args.q) ** 2 * 8
    files = [args.out / "ckpt" / f"step-{step}" / f"tile-{t}" for t in range(args.q * args.q)]
    return all(f.is_file() and f.stat().st_size == tile for f in files)


def run_killed(args: argparse.Namespace) -> dict:
    """Runs the job until the checkpoint of step --kill-at is complete, then SIGKILLs it."""
    segment = f"flagship-{secrets.token_hex(6)}"
    analysis = start_analysis(args, segment, args.steps // args.m + 1)
    job = subprocess.Popen(heat_command(args, segment), env=job_env(), start_new_session=True,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    while not checkpoint_complete(args, args.kill_at):
        if job.poll() is not None:
            analysis.kill()
            raise Failed(
                f"heat: ended (exit {job.returncode}) before step {args.kill_at}: {job.stdout.read()}"
            )
        time.sleep(0.02)
    os.killpg(job.pid, signal.SIGKILL)
    job.wait()
    job.stdout.close()
    analysis_exit = analysis.wait(timeout=60)
    analysis.stdout.close()
    return {"killed_after_step": args.kill_at, "analysis_exit": analysis_exit}


def run_job(args: argparse.Namespace) -> dict:
    segment = f"flagship-{secrets.token_hex(6)}"
    analysis = start_analysis(args, segment, args.steps // args.m + 1)
    started = time.monotonic()
    job = subprocess.run(
        heat_command(args, segment), env=job_env(), capture_output=True, text=True, timeout=600
    )
    seconds = time.monotonic() - started
    said = analysis.communicate(timeout=120)[0]
    if job.returncode != 0:
        raise Failed(f"heat: exit {job.returncode}:\n{job.stdout}{job.stderr}")
    if analysis.returncode != 0:
        raise Failed(f"analysis: exit {analysis.returncode}: {said}")
    sys.stdout.write(job.stdout + said)
    return {"job_seconds": seconds, "output": job.stdout, "analysis": said}


def ffprobe(path: Path) -> str:
    probe = subprocess.run(
        ["ffprobe", "-v", "error", "-select_streams", "v:0", "-count_frames",
         "-show_entries", "stream=codec_name,width,height,nb_read_frames", "-of", "compact", str(path)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    if probe.returncode != 0:
        raise Failed(f"ffprobe {path}: exit {probe.returncode}: {probe.stderr.strip()}")
    return probe.stdout.strip()


def report(args: argparse.Namespace, killed: dict | None, run: dict, probe: str) -> dict:
    restart = re.search(r"restarting from the checkpoint of step (\d+)", run["output"])
    return {
        "n": args.n, "q": args.q, "steps": args.steps, "k": args.k, "m": args.m,
        "nodes": "emulated n0,n1" if "STRATA_EMU_MPIEXEC" in os.environ else "one machine",
        "killed": killed,
        "restarted_from_step": int(restart.group(1)) if restart else 0,
        "job_seconds": round(run["job_seconds"], 3),
        "frames": len(json.loads((args.out / "stats.json").read_text())),
        "video": probe,
    }  # fmt: skip


def write_report(args: argparse.Namespace, data: dict) -> None:
    (args.out / "report.json").write_text(json.dumps(data, indent=1) + "\n")
    lines = [f"# flagship run: {data['n']}x{data['n']}, {data['steps']} steps, {data['nodes']}", ""]
    lines += [f"- {key}: {value}" for key, value in data.items() if key not in ("n", "steps", "nodes")]
    (args.out / "report.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--n", type=int, default=64)
    parser.add_argument("--q", type=int, default=4)
    parser.add_argument("--steps", type=int, default=120)
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument("--m", type=int, default=10)
    parser.add_argument("--kill-at", type=int, default=0)
    parser.add_argument("--bin", type=Path, default=default_bin())
    args = parser.parse_args()
    args.out = args.out.resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    try:
        killed = run_killed(args) if args.kill_at else None
        run = run_job(args)
        data = report(args, killed, run, ffprobe(args.out / "heat.mp4"))
    except (Failed, subprocess.TimeoutExpired) as error:
        print(f"flagship: {error}", file=sys.stderr)
        return 1
    write_report(args, data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
