# SPDX-License-Identifier: MIT
"""A SIGKILLed rank of strata-video: every survivor exits non-zero with an error, within a bound.

MPI and DSM jobs run with one hydra proxy per rank (-launcher fork, a "host" per rank) and
-disable-auto-cleanup: with all ranks under one proxy, MPICH 4.0.2's proxy fails when one of its
ranks dies and takes the others down silently, and without -disable-auto-cleanup mpiexec kills
the survivors itself; either way the program's own detection would go untested. Ranks on
different "hosts" talk through UCX, restricted to TCP (UCX_TLS=tcp,self): UCX's shared-memory
transports abort a process whose peer died mid-transfer (cma: "process_vm_readv ... No such
process"). Each rank notes its pid and its exit status in --log-dir ("exiting with status N").
ZeroMQ ranks are started directly as processes (--rank/--size).

One defect of MPICH 4.0.2's mpiexec is tolerated, and only where it shows: mpiexec forwards
hydra's SIGUSR1 notice for every rank that ends without MPI_Finalize; when two survivors exit
within the same moment, its write to the proxy that just ended fails ("write error (Broken
pipe)" ... "unable to send SIGUSR1 downstream"), mpiexec gives up and its remaining proxies
SIGKILL their ranks before those could report (seen in about 1 of 20 runs). A survivor with no
exit record passes only if it is gone, mpiexec printed that error, and another survivor reported
the failure itself.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
from video_support import HYDRA_TEARDOWN, free_port_base, make_video, program, running

pytestmark = pytest.mark.timeout(90)
TIMEOUT_MS = 2000
BOUND_S = 20  # detection (timeouts of 2 and 4 s, abort notices) with room for a loaded machine


@pytest.fixture(scope="module")
def long_video(tmp_path_factory):
    return make_video(tmp_path_factory.mktemp("video") / "long.mkv", frames=200)


def pid_of(log_dir: Path, rank: int, deadline: float) -> int:
    log = log_dir / f"rank{rank}.log"
    while time.monotonic() < deadline:
        if log.exists():
            m = re.search(r"started, pid (\d+)", log.read_text())
            if m:
                return int(m.group(1))
        time.sleep(0.05)
    pytest.fail(f"rank {rank} did not start (no pid in {log})")


def wait_for_frames(log_dir: Path, victim: int, deadline: float) -> None:
    """Until frames flow through the victim: a worker's first frame, or rank 2's (a worker) for
    the input and output ranks. A fixed sleep instead let a loaded machine kill a worker that had
    not connected yet, and the job then rightly finished without it."""
    rank = victim if victim >= 2 else 2
    log = log_dir / f"rank{rank}.log"
    while time.monotonic() < deadline:
        if log.exists() and "first frame" in log.read_text():
            return
        time.sleep(0.02)
    pytest.fail(f"rank {rank} got no frame (no 'first frame' in {log})")


def common_args(video: Path, output: Path, log_dir: Path) -> list[str]:
    return ["-i", str(video), "-o", str(output), "--timeout-ms", str(TIMEOUT_MS), "--heartbeat-ms", "100",
            "--worker-sleep-ms", "15", "--log-dir", str(log_dir)]  # fmt: skip


def check_survivors(
    log_dir: Path,
    exits: dict[int, int],
    victim: int,
    ranks: int,
    output: Path,
    output_rank: int = 1,
    output_text: str = "",
    torn_down: tuple[int, ...] | list[int] = (),
) -> None:
    for rank in range(ranks):
        if rank == victim or rank in torn_down:
            continue
        assert rank in exits, f"rank {rank} did not exit (no exit code recorded)\n{output_text}"
        assert exits[rank] != 0, f"rank {rank} exited 0 although rank {victim} was killed"
        log = (log_dir / f"rank{rank}.log").read_text()
        assert ": error: " in log, f"rank {rank} exited without an error message:\n{log}"
    if victim != output_rank and output_rank not in torn_down:  # a killed output cannot remove its file
        assert not output.exists(), "the output file of a failed job must be removed"


def run_mpi_and_kill(tmp_path, video, impl, ranks, victim, extra=(), output_rank=1):
    binary = program()
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    output = tmp_path / "out.nut"
    hosts = ",".join(f"127.0.0.{i + 1}" for i in range(ranks))
    cmd = ["mpiexec", "-disable-auto-cleanup", "-launcher", "fork", "-hosts", hosts, "-ppn", "1", "-n", str(ranks),
           "-genv", "UCX_TLS", "tcp,self", str(binary), "--impl", impl,
           *common_args(video, output, log_dir), *extra]  # fmt: skip
    start = time.monotonic()
    # restore_signals=False keeps SIGPIPE ignored in mpiexec: its teardown then says why instead
    # of mpiexec dying silently of SIGPIPE (module docstring).
    job = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, restore_signals=False
    )
    try:
        pid = pid_of(log_dir, victim, start + 30)
        wait_for_frames(log_dir, victim, start + 30)  # mid-run: frames are flowing
        assert job.poll() is None, "the job ended before the kill"
        killed_at = time.monotonic()
        os.kill(pid, signal.SIGKILL)
        out, _ = job.communicate(timeout=BOUND_S + 30)
    finally:
        if job.poll() is None:
            job.kill()
    # mpiexec may return before every rank is gone: each survivor's own record is the evidence.
    exits: dict[int, int] = {}
    pids = {rank: pid_of(log_dir, rank, time.monotonic() + 5) for rank in range(ranks) if rank != victim}
    while True:
        for rank in pids:
            m = re.search(r"exiting with status (\d+)", (log_dir / f"rank{rank}.log").read_text())
            if m:
                exits[rank] = int(m.group(1))
        unrecorded = [pid for rank, pid in pids.items() if rank not in exits]
        if time.monotonic() >= killed_at + BOUND_S or not any(running(pid) for pid in unrecorded):
            break
        time.sleep(0.05)
    elapsed = time.monotonic() - killed_at
    assert elapsed < BOUND_S, f"the survivors took {elapsed:.1f} s to exit (bound {BOUND_S} s)\n{out}"
    for rank, pid in pids.items():
        gone = time.monotonic() + 5
        while time.monotonic() < gone and running(pid):
            time.sleep(0.05)
        assert not running(pid), f"rank {rank} (pid {pid}) is still running"
    torn_down = [rank for rank in pids if rank not in exits]
    if torn_down:
        assert HYDRA_TEARDOWN in out, (
            f"ranks {torn_down} ended without an exit record, and not by mpiexec's teardown\n{out}"
        )
        assert exits, f"no survivor reported the failure before mpiexec's teardown\n{out}"
    check_survivors(log_dir, exits, victim, ranks, output, output_rank, out, torn_down)
    return log_dir, torn_down


def test_a_killed_mpi_worker_gives_every_survivor_an_error(tmp_path, long_video):
    logs, torn_down = run_mpi_and_kill(tmp_path, long_video, "mpi-async-multi", 4, victim=3)
    if 0 not in torn_down:
        assert "died" in (logs / "rank0.log").read_text() or "rank 3" in (logs / "rank0.log").read_text()


def test_a_killed_mpi_output_gives_every_survivor_an_error(tmp_path, long_video):
    run_mpi_and_kill(tmp_path, long_video, "mpi-sync", 4, victim=1)


def test_a_killed_dsm_worker_gives_every_survivor_an_error(tmp_path, long_video):
    # Rank 0 serves, 1 input, 2 output, 3 and 4 workers.
    run_mpi_and_kill(tmp_path, long_video, "dsm", 5, victim=4, output_rank=2)


@pytest.mark.parametrize("impl,victim", [("zmq", 3), ("zmq-credit", 2), ("zmq", 1)])
def test_a_killed_zmq_rank_gives_every_survivor_an_error(tmp_path, long_video, impl, victim):
    binary = program()
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    output = tmp_path / "out.nut"
    ranks = 4
    port = free_port_base()
    procs = [
        subprocess.Popen(
            [
                str(binary),
                "--impl",
                impl,
                "--rank",
                str(r),
                "--size",
                str(ranks),
                "--zmq-port",
                str(port),
                *common_args(long_video, output, log_dir),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for r in range(ranks)
    ]
    try:
        wait_for_frames(log_dir, victim, time.monotonic() + 30)
        assert all(p.poll() is None for p in procs), "the job ended before the kill"
        procs[victim].send_signal(signal.SIGKILL)
        killed_at = time.monotonic()
        exits = {}
        for r, p in enumerate(procs):
            exits[r] = p.wait(timeout=BOUND_S + 10)
        elapsed = time.monotonic() - killed_at
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert elapsed < BOUND_S, f"the survivors took {elapsed:.1f} s (bound {BOUND_S} s)"
    check_survivors(log_dir, exits, victim, ranks, output)
