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
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from capability import require
from conftest import REPO

pytestmark = pytest.mark.timeout(240)
EMULATE = REPO / "apps" / "video" / "emulate"
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


def leftovers() -> list[str]:
    found = []
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    found += [f"namespace {line.split()[0]}" for line in netns.splitlines() if line.startswith("sv")]
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    found += [f"link {line.split(':')[1].strip()}" for line in links.splitlines() if ": sv" in line]
    found += [f"cgroup {p}" for p in Path("/sys/fs/cgroup/cpu").glob("strata-emulate-*")]
    found += [f"segment {p.name}" for p in Path("/dev/shm").glob("strata-*")]
    return found


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


def run_fault(tmp_path: Path, fault: str, ready: str, ended: str, job: str) -> str:
    script = tmp_path / "job.sh"
    script.write_text(f"exec {job}\n")
    run = subprocess.run(
        [str(EMULATE), "--nodes", "n0=none,n1=none,n2=none", "--rate", "1gbit", "--",
         "bash", str(DRIVER), fault, VICTIM, ready, ended, "bash", str(script)],
        capture_output=True, text=True, timeout=220,
    )  # fmt: skip
    assert "checked" in run.stderr, run.stdout + run.stderr
    assert "never ready" not in run.stdout, run.stdout + run.stderr
    return run


def record(system: str, fault: str, run: Run, outcome: str) -> None:
    path = os.environ.get("STRATA_FAULT_RESULTS")
    if not path:
        return
    times = {r.rank: round(r.at - run.fault_at, 2) for r in run.ranks if r.at is not None and r.error}
    with open(path, "a") as f:
        f.write(
            json.dumps({"system": system, "fault": fault, "outcome": outcome, "time_to_error_s": times})
            + "\n"
        )


def check_no_leftovers(run: Run, before: list[str]) -> None:
    left = [x for x in run.driver.splitlines() if x.startswith("left on ")]
    assert not left, f"processes of the run outlived it: {left}\n{run.driver}"
    assert leftovers() == before


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
def test_a_node_fault_gives_dsm_survivors_errors_naming_the_node(tmp_path, emulation_ready, fault):
    program = BIN / "dsm_node_fault_test"
    require(program.exists(), f"{program} (build the default preset)")
    before = leftovers()
    reports = tmp_path / "reports"
    reports.mkdir()
    # Clients on the surviving nodes end with an error or "done"; the server once its clients are gone.
    want = 4 if fault != "kill" else 3
    ended = f'[ $(grep -l "^error at\\|^done:\\|^serve ended" {reports}/rank*.txt 2>/dev/null | wc -l) -ge {want} ]'
    job = (f"$STRATA_EMU_MPIEXEC -disable-auto-cleanup -hosts n0:2,n1:1,n2:1 -n 4 {program} {reports} 65536 400 10"
           f" > {tmp_path / 'mpiexec.out'} 2>&1")  # fmt: skip
    proc = run_fault(tmp_path, fault, f'grep -qx "round 5" {reports}/rank3.txt 2>/dev/null', ended, job)
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
    check_no_leftovers(run, before)


# ---- distributed OCR (tests/ocr/dist/keeps_every_rank_busy.c): a rank on each of n0, n1, n2; tokens
# hop between ranks with a shared-memory data block each hop. Its ranks print their errors to stderr,
# which hydra forwards: a rank behind a cut link cannot be heard, so the survivors on n0 and n1 are
# the ones checked, each at the moment the driver saw its line.

OCR_LINE = re.compile(r"^strata-ocr: rank (\d+): (peer_dead: .*)$", re.MULTILINE)


@pytest.mark.parametrize("fault", MPI_LAUNCHED_FAULTS)
def test_a_node_fault_gives_ocr_survivors_errors_naming_the_node(tmp_path, emulation_ready, fault):
    program = BIN / "ocr_dist_keeps_every_rank_busy"
    require(
        program.exists() and STRATA_BIN.exists(), f"{program} and {STRATA_BIN} (build the default preset)"
    )
    before = leftovers()
    out = tmp_path / "job.out"
    seconds = 12 if fault == "degrade" else 90
    job = (f'env STRATA_MPIEXEC="$STRATA_EMU_MPIEXEC -hosts n0,n1,n2" {STRATA_BIN} ocr -n 3 --db-placement shared'
           f" {program} {seconds} > {out} 2>&1")  # fmt: skip
    ready = f'grep -q "rank 2 pid" {out} 2>/dev/null && sleep 1'
    # After a degraded link: the job's own end ($job, the driver's); else both survivors' errors.
    ended = "! kill -0 $job 2>/dev/null"
    if fault != "degrade":
        ended = f'[ $(grep -c "^strata-ocr: rank [01]: peer_dead" {out} 2>/dev/null) -ge 2 ]'
    proc = run_fault(tmp_path, fault, ready, ended, job)
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
    check_no_leftovers(Run(proc.stdout, proc.stderr, fault_at, []), before)
