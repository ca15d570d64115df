# SPDX-License-Identifier: MIT
"""`strata run` of process tasks leaves nothing behind: a run ended by SIGTERM or SIGINT passes the signal on
to its MPI job, removes its directory (/tmp/strata-run-PID-XXXXXX) and its segment, and ends by that signal;
the directory of a run that was SIGKILLed is removed by the next run of the same user, while the directories
of live runs and of other users stay (docs/workflow.md, "Cleanup")."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from capability import require
from paced_workflow import paced_workflow

REPO = Path(__file__).resolve().parents[2]
STRATA_BIN = Path(os.environ.get("STRATA_BIN", REPO / "build" / "default" / "bin" / "strata"))
HANG = 60  # seconds: a hang bound, not a timing


def strata() -> str:
    require(STRATA_BIN.exists(), f"strata built at {STRATA_BIN}")
    require(shutil.which("mpiexec") is not None, "mpiexec (MPICH)")
    return str(STRATA_BIN)


def run_dirs(pid: int) -> list[Path]:
    return sorted(Path("/tmp").glob(f"strata-run-{pid}-*"))


def processes_naming(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline:
            found.append(int(entry.name))
    return found


def wait_for(predicate, what: str) -> None:
    deadline = time.monotonic() + HANG
    while not predicate():
        assert time.monotonic() < deadline, f"{what}: not seen within {HANG} s"
        time.sleep(0.05)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_run_ended_by_a_signal_removes_its_directory_segment_and_ranks_and_ends_by_that_signal(
    tmp_path, sig
):
    shm_dir = tmp_path / "shm"
    shm_dir.mkdir(mode=0o700)
    workflow = paced_workflow(tmp_path / "long.toml", iterations=600, period_us=100_000, method="shm")
    env = dict(os.environ, STRATA_SHM_DIR=str(shm_dir))
    run = subprocess.Popen(
        [strata(), "run", "--quiet", str(workflow)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        # The ranks have attached once the run's segment exists.
        wait_for(lambda: any(shm_dir.glob(f"strata.strata-workflow-{run.pid}-*.seg")), "the run's segment")
        directory = run_dirs(run.pid)
        assert len(directory) == 1, f"expected one directory of run {run.pid}: {directory}"
        ranks = processes_naming(str(directory[0]))
        assert ranks, f"no rank names {directory[0]} on its command line"
        run.send_signal(sig)
        _, err = run.communicate(timeout=HANG)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == -sig, f"strata run exited {run.returncode}, expected -{sig}: {err.decode()}"
    assert run_dirs(run.pid) == [], "the run's directory is left"
    assert list(shm_dir.iterdir()) == [], f"left in the segment directory: {list(shm_dir.iterdir())}"
    wait_for(lambda: not processes_naming(str(directory[0])), "every rank of the run gone")


def test_the_next_run_removes_the_directory_of_a_killed_run_and_keeps_live_and_foreign_ones(tmp_path):
    dead = subprocess.Popen(["true"])
    dead.wait()
    killed_run = Path(f"/tmp/strata-run-{dead.pid}-test{os.getpid()}")
    live_run = Path(f"/tmp/strata-run-{os.getpid()}-test{os.getpid()}")
    foreign_run = Path(f"/tmp/strata-run-{dead.pid}-foreign{os.getpid()}")
    made = [killed_run, live_run]
    try:
        for d in made:
            d.mkdir(mode=0o700)
            (d / "workflow.toml").write_text("left by a run\n")
        if os.geteuid() == 0:
            foreign_run.mkdir(mode=0o700)
            made.append(foreign_run)
            os.chown(foreign_run, 65534, 65534)
        workflow = paced_workflow(tmp_path / "short.toml", iterations=5, period_us=0, method="shm")
        env = dict(os.environ, STRATA_SHM_DIR=str(tmp_path / "shm"))
        (tmp_path / "shm").mkdir(mode=0o700)
        done = subprocess.run(
            [strata(), "run", "--quiet", str(workflow)],
            env=env,
            capture_output=True,
            timeout=HANG,
            check=False,
        )
        assert done.returncode == 0, done.stderr.decode()
        assert not killed_run.exists(), "the directory of a run whose process is gone is left"
        assert live_run.exists(), "the directory of a live process was removed"
        if os.geteuid() == 0:
            assert foreign_run.exists(), "another user's directory was removed"
    finally:
        for d in made:
            shutil.rmtree(d, ignore_errors=True)
