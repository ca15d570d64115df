# SPDX-License-Identifier: MIT
"""Runs the flagship workflow (docs/getting-started/flagship.md) and writes its report.

    flagship.py --out DIR [--n 64] [--q 4] [--steps 120] [--k 20] [--m 10] [--steer-below T]
                [--kill-at STEP [--hold]] [--check] [--bin DIR]

Under apps/video/emulate (STRATA_EMU_MPIEXEC set) the heat program's 2 ranks run on the
emulated nodes n0 and n1, the analysis on n0 beside rank 0, and the steering job's DSM server
and bridge on n0, its console on n1; elsewhere everything runs here. --steer-below 0 runs
without steering. With --kill-at S the heat job is SIGKILLed once a checkpoint of step S or later
is complete (with --hold, once every tile stopped after the one of S: a known point), and run again: it
continues from the last complete checkpoint. --check compares the
final field and the steering decisions with the serial numpy reference (reference.py). DIR
receives field.bin, ckpt/, heat.mp4, stats.json, heat.png, report.json and report.md.
Exit 0, or 1 naming the part that failed (or the first difference from the reference).
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import checkpoints
import numpy as np
import reference
from report import counters, link_bytes, write_report

HERE = Path(__file__).resolve().parent
PYTHON = sys.executable


class Failed(Exception):
    """A part of the workflow failed; the message names it."""


def default_bin() -> Path:
    built = HERE.parent.parent / "build" / "default" / "bin"
    return built if (built / "flagship_heat").exists() else Path(sys.prefix) / "bin"


def emulated() -> bool:
    return "STRATA_EMU_MPIEXEC" in os.environ


def on_node(node: str, command: list[str]) -> list[str]:
    """`command` on emulated node `node` (its namespace and cgroup), or here without emulation."""
    return [os.environ["STRATA_EMU_LAUNCHER"], node, shlex.join(command)] if emulated() else command


def mpiexec(hosts: str) -> list[str]:
    return shlex.split(os.environ["STRATA_EMU_MPIEXEC"]) + ["-hosts", hosts] if emulated() else ["mpiexec"]


def job_env() -> dict[str, str]:
    env = dict(os.environ)
    if emulated():
        env["STRATA_MPIEXEC"] = shlex.join(mpiexec("n0,n1"))
    return env


def wait_for(process: subprocess.Popen, line: str, what: str) -> None:
    said = process.stdout.readline().strip()
    if said != line:
        raise Failed(f"{what}: did not start (said {said!r}, exit {process.poll()})")


class Companions:
    """The analysis (and the steering job) of one heat run, started before it; a context
    manager that stops whatever still runs when the run fails."""

    def __init__(self, args: argparse.Namespace):
        self.segment = f"flagship-{secrets.token_hex(6)}"
        command = [PYTHON, str(HERE / "analysis.py"), "--segment", self.segment,
                   "--frames", str(args.steps // args.m + 1), "--n", str(args.n), "--out", str(args.out),
                   "--consumers", "2" if args.steer_below else "1"]  # fmt: skip
        self.steer = None
        self.analysis = subprocess.Popen(on_node("n0", command), stdout=subprocess.PIPE, text=True)
        try:
            wait_for(self.analysis, "analysis: ready", "analysis")
            self.start_steering(args)
        except Failed:
            self.stop()
            raise

    def __enter__(self) -> Companions:
        return self

    def __exit__(self, failure, *_) -> None:
        if failure is not None:
            self.stop()

    def start_steering(self, args: argparse.Namespace) -> None:
        if args.steer_below:
            # -disable-auto-cleanup: a rank that dies must not make mpiexec kill the others before
            # they report it, as for strata ocr.
            command = [*mpiexec("n0:2,n1:1"), "-disable-auto-cleanup", "-n", "3",
                       str(args.bin / "flagship_steer"), self.segment, str(args.steps), str(args.steer_below)]  # fmt: skip
            self.steer = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, start_new_session=True)
            wait_for(self.steer, "steer: ready", "steering job")

    def stop(self) -> None:
        """Ends what still runs after the heat job failed: the steering job (its bridge waits
        for frames that will not come), then the analysis, with SIGTERM so that it leaves the
        segment and, as its last user, removes it."""
        if self.steer is not None and self.steer.poll() is None:
            self.steer.terminate()  # mpiexec passes SIGTERM to the ranks and waits for their proxies
            try:
                self.steer.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.steer.pid, signal.SIGKILL)
                self.steer.communicate()
        if self.analysis.poll() is None:
            self.analysis.terminate()
            try:
                self.analysis.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                self.analysis.kill()
                self.analysis.communicate()

    def finish(self) -> tuple[int, str, int | None, str]:
        said = self.analysis.communicate(timeout=120)[0]
        steer_said, steer_exit = "", None
        if self.steer is not None:
            try:
                steer_said = self.steer.communicate(timeout=60)[0]
            except subprocess.TimeoutExpired:
                os.killpg(self.steer.pid, signal.SIGKILL)
                steer_said = self.steer.communicate()[0]
            steer_exit = self.steer.returncode
            # The ranks exit without MPI_Finalize (steer.cpp), past a barrier, each saying its exit
            # code after telling Hydra its end is deliberate: the job failed if mpiexec or a rank
            # says so, or a rank said nothing.
            codes = [int(c) for c in re.findall(r"^steer: rank \d+ exit (\d+)$", steer_said, re.MULTILINE)]
            if len(codes) != 3:
                steer_exit = steer_exit or 1
            elif steer_exit == 0:  # mpiexec's own failure (or a signal, negative) wins over the ranks'
                steer_exit = max(codes)
        return self.analysis.returncode, said, steer_exit, steer_said


def heat_command(args: argparse.Namespace, segment: str) -> list[str]:
    return [str(args.bin / "strata"), "ocr", "-n", "2", "--stats", "--external-config",
            str(HERE / "flagship.toml"), str(args.bin / "flagship_heat"), str(args.n), str(args.q),
            str(args.steps), str(args.k), str(args.m), str(args.out), segment,
            *(["steer"] if args.steer_below else [])]  # fmt: skip


def checkpoint_reached(args: argparse.Namespace, step: int) -> bool:
    return checkpoints.reached(checkpoints.read(args.out / "ckpt", args.n, args.q), args.q, step)


def run_killed(args: argparse.Namespace) -> dict:
    """Runs the job until a checkpoint of step --kill-at or later is complete, then SIGKILLs it."""
    with Companions(args) as companions:
        env = job_env() | ({"STRATA_FLAGSHIP_HOLD_AT": str(args.kill_at)} if args.hold else {})
        job = subprocess.Popen(heat_command(args, companions.segment), env=env, start_new_session=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
        while not checkpoint_reached(args, args.kill_at):
            if job.poll() is not None:
                raise Failed(
                    f"heat: ended (exit {job.returncode}) before step {args.kill_at}: {job.stdout.read()}"
                )
            time.sleep(0.02)
        os.killpg(job.pid, signal.SIGKILL)
        job.wait()
        job.stdout.close()
        analysis_exit, _, steer_exit, _ = companions.finish()
    return {"killed_after_step": args.kill_at, "analysis_exit": analysis_exit, "steer_exit": steer_exit}


def heat_failed(job: subprocess.CompletedProcess) -> Failed:
    """The heat job's own lines and the runtime's, without the counters and the statistics."""
    lines = (job.stdout + job.stderr).splitlines()
    said = [line for line in lines if re.match(r"(heat|strata[- ]ocr)\b", line) and "counters" not in line]
    return Failed(f"heat: exit {job.returncode}: " + "\n".join(said))


def run_job(args: argparse.Namespace) -> dict:
    with Companions(args) as companions:
        before = link_bytes(1)
        started = time.monotonic()
        job = subprocess.run(
            heat_command(args, companions.segment), env=job_env(), capture_output=True, text=True, timeout=600
        )
        seconds = time.monotonic() - started
        if job.returncode != 0:
            raise heat_failed(job)  # a heat job that failed early never connected to its companions
        analysis_exit, said, steer_exit, steer_said = companions.finish()
    link = link_bytes(1) - before if before is not None else None
    if analysis_exit != 0:
        raise Failed(f"analysis: exit {analysis_exit}: {said}")
    if steer_exit not in (None, 0):
        raise Failed(f"steering job: exit {steer_exit}: {steer_said}")
    output = job.stdout + job.stderr + said + steer_said
    print("\n".join(line for line in output.splitlines() if re.match(r"(heat|analysis|steer): ", line)))
    return {"job_seconds": seconds, "output": output, "link_n1_bytes": link}


def ffprobe(path: Path) -> str:
    probe = subprocess.run(
        ["ffprobe", "-v", "error", "-select_streams", "v:0", "-count_frames",
         "-show_entries", "stream=codec_name,width,height,nb_read_frames", "-of", "compact", str(path)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    if probe.returncode != 0:
        raise Failed(f"ffprobe {path}: exit {probe.returncode}: {probe.stderr.strip()}")
    return probe.stdout.strip()


def check(args: argparse.Namespace, data: dict) -> dict:
    """The final field and the steering decisions against the serial reference."""
    want, decided = reference.run(args.n, args.steps, args.m, args.steer_below)
    got = np.fromfile(args.out / "field.bin", dtype="<f8").reshape(args.n, args.n)
    difference = float(np.max(np.abs(got - want)))
    if not np.allclose(got, want, rtol=1e-12, atol=1e-12):
        raise Failed(f"field.bin differs from the serial reference: max |difference| {difference:.3e}")
    start = data["restarted_from_step"]
    steering = {d["step"]: d["alpha"] for d in data["steering"]}
    if steering != {s: a for s, a in decided.items() if s >= start}:
        raise Failed(f"the steering decisions {steering} differ from the reference's {decided}")
    return {"max_difference_from_reference": difference}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--n", type=int, default=64)
    parser.add_argument("--q", type=int, default=4)
    parser.add_argument("--steps", type=int, default=120)
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument("--m", type=int, default=10)
    parser.add_argument("--steer-below", type=float, default=95.0)
    parser.add_argument("--kill-at", type=int, default=0)
    parser.add_argument("--hold", action="store_true")
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--bin", type=Path, default=default_bin())
    args = parser.parse_args()
    args.out = args.out.resolve()
    return args


def main() -> int:
    args = parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    try:
        if args.kill_at and (args.k == 0 or args.kill_at % args.k != 0 or args.kill_at >= args.steps):
            raise Failed(
                f"--kill-at={args.kill_at}: must be a multiple of --k={args.k} below --steps={args.steps}"
            )
        killed = run_killed(args) if args.kill_at else None
        run = run_job(args)
        restart = re.search(r"restarting from the checkpoint of step (\d+)", run["output"])
        data = {
            "nodes": "emulated n0,n1" if emulated() else "one machine",
            "killed": killed,
            "restarted_from_step": int(restart.group(1)) if restart else 0,
            "job_seconds": round(run["job_seconds"], 3),
            "link_n1_bytes": run["link_n1_bytes"],
            "video": ffprobe(args.out / "heat.mp4"),
            **counters(run["output"]),
        }
        if args.check:
            data.update(check(args, data))
    except (Failed, subprocess.TimeoutExpired) as error:
        print(f"flagship: {error}", file=sys.stderr)
        return 1
    write_report(args, data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
