# SPDX-License-Identifier: MIT
"""Faults across emulated nodes (issue 28; docs/reliability.md): for each cross-node system, a node
killed (every process of its cgroup SIGKILLed at once), its link cut mid-transfer (both veth ends
down), and its link degraded to 1 Mbit/s for 4 s. A kill or a cut must give every surviving rank
an error naming a lost node, never a hang; a degraded link must still give the right output.
Nothing of the run may be left: no process in any node's cgroup before the emulation's own
cleanup, no namespace, link, cgroup, shm segment or output file after it.

apps/video/emulate builds the nodes (n0, n1, n2; the victim is always n2) and runs
node_fault_driver.sh, which starts the job, waits until it is mid-run, injects the fault through
$STRATA_EMU_FAULT, and prints when. Each system's ranks write the time of their error
(CLOCK_REALTIME) or their last record, so the time to error is measured, not asserted: the
assertion is the hang bound (60 s), far above the 10 s the issue asks, because a loaded machine
must not fail it; the measured times go to $STRATA_FAULT_RESULTS (a JSON line each) for the table.
Needs root.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from capability import require
from conftest import REPO
from emulation_support import EMULATE, emulation_leftovers

pytestmark = pytest.mark.timeout(240)
DRIVER = Path(__file__).with_name("node_fault_driver.sh")
STRATA_BIN = Path(os.environ.get("STRATA_BIN", REPO / "build" / "default" / "bin" / "strata"))
BIN = STRATA_BIN.parent
HANG_BOUND_S = 60
VICTIM = "n2"
FAULTS = ("kill", "cut", "degrade")
# MPICH 4.0.2's mpiexec asserts when a node's hydra proxy dies with it ("control_cb
# (pm/pmiserv/pmiserv_cb.c:206): assert (!closed) failed"), exits, and every other proxy then
# SIGTERMs and at once SIGKILLs its ranks (HYD_pmcd_pmip_killjob): the survivors die within
# milliseconds, before any detection could report, and mpiexec's message names no node, even with
# -disable-auto-cleanup (which covers dead ranks, not dead proxies). Strict: it turns into a failure
# the day a launcher keeps the survivors alive, so that the test then has to pass.
MPI_LAUNCHED_FAULTS = [
    pytest.param(
        "kill", marks=pytest.mark.xfail(strict=True, reason="hydra tears the job down when a proxy dies")
    ),
    "cut",
    "degrade",
]


@pytest.fixture
def shm_dir():
    """The run's segment directory (STRATA_SHM_DIR, passed to every rank): empty at the end."""
    path = Path("/dev/shm") / f"strata-faults-test-{uuid.uuid4().hex[:12]}"
    path.mkdir(mode=0o700)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def emulation_ready():
    require(os.geteuid() == 0, "root (network namespaces, tc, cgroups)")
    require(Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us").exists(), "cgroup v1 cpu controller")


@dataclass
class Rank:
    """One rank's record after the run: its node, its error (or None) and when it ended."""

    rank: int
    node: str
    error: str | None
    at: float | None
    done: bool


@dataclass
class Run:
    driver: str
    emulate: str
    fault_at: float
    ranks: list[Rank]

    def line(self, prefix: str) -> str | None:
        return next((x for x in self.driver.splitlines() if x.startswith(prefix)), None)


def run_fault(tmp_path: Path, shm_dir: Path, fault: str, ready: str, ended: str, job: str) -> str:
    script = tmp_path / "job.sh"
    script.write_text(f"export STRATA_SHM_DIR={shm_dir}\nexec {job}\n")
    emulation = subprocess.Popen(
        [str(EMULATE), "--nodes", "n0=none,n1=none,n2=none", "--rate", "1gbit", "--",
         "bash", str(DRIVER), fault, VICTIM, ready, ended, "bash", str(script)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        stdout, stderr = emulation.communicate(timeout=220)
    finally:
        if emulation.poll() is None:
            emulation.kill()  # emulate's trap cannot run then: the check below reports what is left
    run = subprocess.CompletedProcess(emulation.args, emulation.returncode, stdout, stderr)
    run.emulate_pid = emulation.pid
    assert "checked" in run.stderr, run.stdout + run.stderr
    assert "never ready" not in run.stdout, run.stdout + run.stderr
    return run


def record(system: str, fault: str, run: Run, outcome: str) -> None:
    path = os.environ.get("STRATA_FAULT_RESULTS")
    if not path:
        return
    times = {r.rank: round(r.at - run.fault_at, 2) for r in run.ranks if r.at is not None and r.error}
    launcher_left = run.line("launcher still running") is not None  # mpiexec waiting for a cut-off proxy
    entry = {
        "system": system,
        "fault": fault,
        "outcome": outcome,
        "time_to_error_s": times,
        "launcher_left": launcher_left,
    }
    with open(path, "a") as f:
        f.write(json.dumps(entry) + "\n")


def check_no_leftovers(run: Run, emulate_pid: int, shm_dir: Path) -> None:
    left = [x for x in run.driver.splitlines() if x.startswith("left on ")]
    assert not left, f"processes of the run outlived it: {left}\n{run.driver}"
    assert emulation_leftovers(emulate_pid) == []
    assert sorted(p.name for p in shm_dir.iterdir()) == [], "segment files of the run outlived it"


def check_errors_name_a_lost_node(run: Run, fault: str) -> None:
    """Every rank that lives through the fault reports an error naming a node other than its own."""
    survivors = [r for r in run.ranks if not (fault == "kill" and r.node == VICTIM)]
    for r in survivors:
        assert r.error is not None, f"rank {r.rank} on {r.node} ended without an error\n{run.driver}"
        lost = [VICTIM] if r.node != VICTIM else [n for n in ("n0", "n1") if n != r.node]
        assert any(f"node {n}" in r.error for n in lost), (
            f"rank {r.rank} on {r.node}: {r.error!r} names no lost node"
        )
        assert r.at - run.fault_at < HANG_BOUND_S, (
            f"rank {r.rank}: error {r.at - run.fault_at:.1f} s after the fault"
        )


# ---- the DSM (tests/mpi_dsm/dsm_node_fault_test.cpp): 1 server and a client on n0, a client on n1 and n2.

DSM_RANKS = {0: "n0", 1: "n0", 2: "n1", 3: "n2"}


def dsm_ranks(reports: Path) -> list[Rank]:
    ranks = []
    for rank, node in DSM_RANKS.items():
        text = (reports / f"rank{rank}.txt").read_text() if (reports / f"rank{rank}.txt").exists() else ""
        m = re.search(r"^error at ([\d.]+): (.*)$", text, re.MULTILINE)
        served = re.search(r"^serve ended at ([\d.]+)", text, re.MULTILINE)
        ranks.append(Rank(rank, node, m.group(2) if m else None,
                          float(m.group(1)) if m else (float(served.group(1)) if served else None),
                          "done:" in text or served is not None))  # fmt: skip
    return ranks


@pytest.mark.parametrize("fault", MPI_LAUNCHED_FAULTS)
def test_a_node_fault_gives_dsm_survivors_errors_naming_the_node(tmp_path, shm_dir, emulation_ready, fault):
    program = BIN / "dsm_node_fault_test"
    require(program.exists(), f"{program} (build the default preset)")
    reports = tmp_path / "reports"
    reports.mkdir()
    # Clients on the surviving nodes end with an error or "done"; the server once its clients are gone.
    want = 4 if fault != "kill" else 3
    ended = f'[ $(grep -l "^error at\\|^done:\\|^serve ended" {reports}/rank*.txt 2>/dev/null | wc -l) -ge {want} ]'
    job = (f"$STRATA_EMU_MPIEXEC -disable-auto-cleanup -hosts n0:2,n1:1,n2:1 -n 4 {program} {reports} 65536 400 10"
           f" > {tmp_path / 'mpiexec.out'} 2>&1")  # fmt: skip
    proc = run_fault(
        tmp_path, shm_dir, fault, f'grep -qx "round 5" {reports}/rank3.txt 2>/dev/null', ended, job
    )
    run = Run(proc.stdout, proc.stderr, float(re.search(r"fault at ([\d.]+)", proc.stdout).group(1)),
              dsm_ranks(reports))  # fmt: skip
    details = f"{proc.stdout}\n{(tmp_path / 'mpiexec.out').read_text()}\n" + "\n".join(
        f"rank{r}: {(reports / f'rank{r}.txt').read_text()[-400:]}"
        for r in DSM_RANKS
        if (reports / f"rank{r}.txt").exists()
    )
    if fault == "degrade":
        record("dsm", fault, run, "finished" if all(r.done for r in run.ranks) else "failed")
        assert "running at restore" in proc.stdout, f"the job ended before the link was restored\n{details}"
        for r in run.ranks:
            assert r.error is None and r.done, f"rank {r.rank}: {r.error}\n{details}"
        assert all("done: 400 rounds checked" in (reports / f"rank{r}.txt").read_text() for r in (1, 2, 3))
    else:
        clients = Run(run.driver, run.emulate, run.fault_at, [r for r in run.ranks if r.rank != 0])
        record(
            "dsm",
            fault,
            run,
            "errors" if all(r.error for r in clients.ranks if r.node != VICTIM) else "no error",
        )
        assert "ranks ended at" in proc.stdout, details
        check_errors_name_a_lost_node(clients, fault)
    check_no_leftovers(run, proc.emulate_pid, shm_dir)


# ---- distributed OCR (tests/ocr/dist/keeps_every_rank_busy.c): a rank on each of n0, n1, n2; tokens
# hop between ranks with a shared-memory data block each hop. Its ranks print their errors to stderr,
# which hydra forwards: a rank behind a cut link cannot be heard, so the survivors on n0 and n1 are
# the ones checked, each at the moment the driver saw its line.

OCR_LINE = re.compile(r"^strata-ocr: rank (\d+): (peer_dead: .*)$", re.MULTILINE)


@pytest.mark.parametrize("fault", MPI_LAUNCHED_FAULTS)
def test_a_node_fault_gives_ocr_survivors_errors_naming_the_node(tmp_path, shm_dir, emulation_ready, fault):
    program = BIN / "ocr_dist_keeps_every_rank_busy"
    require(
        program.exists() and STRATA_BIN.exists(), f"{program} and {STRATA_BIN} (build the default preset)"
    )
    out = tmp_path / "job.out"
    seconds = 12 if fault == "degrade" else 90
    job = (f'env STRATA_MPIEXEC="$STRATA_EMU_MPIEXEC -hosts n0,n1,n2" {STRATA_BIN} ocr -n 3 --db-placement shared'
           f" {program} {seconds} > {out} 2>&1")  # fmt: skip
    # Mid-run: every rank started and shared blocks exist (so that a segment left would be seen).
    ready = f'grep -q "rank 2 pid" {out} 2>/dev/null && ls {shm_dir} | grep -q . && sleep 1'
    # After a degraded link: the job's own end ($job, the driver's); else both survivors' errors.
    ended = "! kill -0 $job 2>/dev/null"
    if fault != "degrade":
        ended = f'[ $(grep -c "^strata-ocr: rank [01]: peer_dead" {out} 2>/dev/null) -ge 2 ]'
    proc = run_fault(tmp_path, shm_dir, fault, ready, ended, job)
    text = out.read_text()
    fault_at = float(re.search(r"fault at ([\d.]+)", proc.stdout).group(1))
    details = f"{proc.stdout}\n{text}"
    if fault == "degrade":
        rc = int(re.search(r"job exit (\d+)", proc.stdout).group(1))
        record(
            "ocr", fault, Run(proc.stdout, proc.stderr, fault_at, []), "finished" if rc == 0 else f"exit {rc}"
        )
        assert "running at restore" in proc.stdout, details
        assert rc == 0, details
    else:
        ended_at = re.search(r"ranks ended at ([\d.]+)", proc.stdout)
        errors = {int(r): e for r, e in OCR_LINE.findall(text)}
        ranks = [
            Rank(r, f"n{r}", errors.get(r), float(ended_at.group(1)) if ended_at else None, False)
            for r in (0, 1)
        ]
        run = Run(proc.stdout, proc.stderr, fault_at, ranks)
        record("ocr", fault, run, "errors" if len(errors) >= 2 else "no error")
        assert ended_at, details
        check_errors_name_a_lost_node(run, "kill")
    check_no_leftovers(Run(proc.stdout, proc.stderr, fault_at, []), proc.emulate_pid, shm_dir)


# ---- the video pipeline (apps/video): input and output on n0, a worker on n1 and one on n2 (the DSM's
# server on n0 too). MPI and DSM jobs are launched by mpiexec; ZeroMQ ranks, which need no MPI, are
# started on their nodes by the emulation's launcher, one process each (--rank/--size). Each rank's
# --log-dir record ends with its error and "exiting with status N": the record's last write is the
# time of its error.

VIDEO_LAYOUT = {"mpi-async-multi": ["n0", "n0", "n1", "n2"], "zmq-credit": ["n0", "n0", "n1", "n2"],
                "dsm": ["n0", "n0", "n0", "n1", "n2"]}  # fmt: skip


def video_job(impl: str, binary: Path, video: Path, output: Path, logs: Path) -> str:
    nodes = VIDEO_LAYOUT[impl]
    args = (f"--impl {impl} -i {video} -o {output} --timeout-ms 3000 --heartbeat-ms 250 --worker-sleep-ms 20"
            f" --log-dir {logs}")  # fmt: skip
    if impl.startswith("zmq"):
        starts = [
            f"$STRATA_EMU_LAUNCHER {node} {binary} {args} --rank {r} --size {len(nodes)} --zmq-host $gateway"
            f" --zmq-port 27600 > {logs}/out{r} 2>&1 &"
            for r, node in enumerate(nodes)
        ]
        return "bash -c 'set -- $STRATA_EMU_ADDRS; gateway=$1; " + " ".join(starts) + " wait'"
    hosts = ",".join(f"{n}:{nodes.count(n)}" for n in dict.fromkeys(nodes))
    return f"$STRATA_EMU_MPIEXEC -disable-auto-cleanup -hosts {hosts} -n {len(nodes)} {binary} {args}"


@pytest.mark.parametrize("fault", ["kill", "cut", "degrade"])
@pytest.mark.parametrize("impl", list(VIDEO_LAYOUT))
def test_a_node_fault_gives_video_survivors_errors_naming_the_node(
    tmp_path, shm_dir, emulation_ready, request, impl, fault
):
    from video_support import decode, make_video, program, reference

    if fault == "kill" and not impl.startswith("zmq"):
        request.applymarker(
            pytest.mark.xfail(strict=True, reason="hydra tears the job down when a proxy dies")
        )
    binary = program()
    video = make_video(tmp_path / "in.mkv", frames=400)
    output = tmp_path / "out.nut"
    logs = tmp_path / "logs"
    logs.mkdir()
    nodes = VIDEO_LAYOUT[impl]
    worker = len(nodes) - 1  # the rank on n2
    ready = f'grep -q "first frame" {logs}/rank{worker}.log 2>/dev/null && sleep 0.5'
    survivors = [r for r, n in enumerate(nodes) if not (fault == "kill" and n == VICTIM)]
    ended = " && ".join(f'grep -q "exiting with status" {logs}/rank{r}.log 2>/dev/null' for r in survivors)
    proc = run_fault(tmp_path, shm_dir, fault, ready, ended, video_job(impl, binary, video, output, logs))
    fault_at = float(re.search(r"fault at ([\d.]+)", proc.stdout).group(1))
    ranks = []
    for r, node in enumerate(nodes):
        log = logs / f"rank{r}.log"
        text = log.read_text() if log.exists() else ""
        error = next((x for x in text.splitlines() if ": error: " in x), None)
        ranks.append(Rank(r, node, error, log.stat().st_mtime if log.exists() else None, "status 0" in text))
    run = Run(proc.stdout, proc.stderr, fault_at, ranks)
    details = proc.stdout + "\n".join(f"rank {r.rank} ({r.node}): {r.error}" for r in ranks)
    if fault == "degrade":
        record(f"video {impl}", fault, run, "finished" if all(r.done for r in ranks) else "failed")
        assert "running at restore" in proc.stdout, details
        assert all(r.done for r in ranks), details
        assert (decode(output) == reference(decode(video))).all(), "frames differ from the reference"
        output.unlink()
    else:
        record(
            f"video {impl}",
            fault,
            run,
            "errors" if all(r.error for r in ranks if r.rank in survivors) else "no error",
        )
        assert "ranks ended at" in proc.stdout, details
        check_errors_name_a_lost_node(
            Run(run.driver, run.emulate, fault_at, [ranks[r] for r in survivors]), fault
        )
        assert not output.exists(), "a failed job leaves no output"
    check_no_leftovers(run, proc.emulate_pid, shm_dir)
