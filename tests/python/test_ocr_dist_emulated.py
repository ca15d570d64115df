# SPDX-License-Identifier: MIT
"""Distributed OCR across 2 emulated nodes (apps/video/emulate: a network namespace and a cgroup
per node, joined by veth links; UCX over TCP between them): every program of
tests/ocr/dist/programs.txt passes with one rank per node, the distributed examples
(tests/ocr/dist/apps) match their serial references, and a rank killed on one node is named
by the survivor on the other, which removes what the dead rank left. Nothing of the emulation is
left behind, and no segment: each test's jobs get a segment directory of their own under /dev/shm
(STRATA_SHM_DIR, which mpiexec passes to every rank), which must be empty at the end. Needs root.
"""

from __future__ import annotations

import os
import re
import shutil
import textwrap
import uuid
from pathlib import Path

import pytest
from capability import require
from conftest import REPO
from emulation_support import Emulated, emulation_leftovers, run_emulated

pytestmark = pytest.mark.timeout(300)
STRATA_BIN = Path(os.environ.get("STRATA_BIN", REPO / "build" / "default" / "bin" / "strata"))
BIN = STRATA_BIN.parent
PROGRAMS = REPO / "tests" / "ocr" / "dist" / "programs.txt"


def programs() -> list[tuple[str, int, list[str]]]:
    found = []
    for line in PROGRAMS.read_text().splitlines():
        if line and line[0].isalpha():
            name, code, *args = line.split()
            found.append((name, int(code), args))
    return found


@pytest.fixture
def shm_dir():
    path = Path("/dev/shm") / f"strata-ocr-emulated-test-{uuid.uuid4().hex[:12]}"
    path.mkdir(mode=0o700)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def leftovers(shm_dir: Path, run: Emulated) -> list[str]:
    """What the run left: segment files in its own directory, its namespaces, links and cgroup."""
    return [f"segment file {p.name}" for p in shm_dir.iterdir()] + emulation_leftovers(run.pid)


@pytest.fixture(scope="module")
def emulation_ready():
    require(os.geteuid() == 0, "root (network namespaces, tc, cgroups)")
    require(Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us").exists(), "cgroup v1 cpu controller")
    require(STRATA_BIN.exists(), f"{STRATA_BIN} (build the default preset)")


def emulate(script: Path, timeout: int) -> Emulated:
    return run_emulated(["--nodes", "n0=none,n1=none", "--rate", "none", "--", "sh", str(script)], timeout)


def test_every_distributed_program_passes_on_two_emulated_nodes(tmp_path, shm_dir, emulation_ready):
    runs = []
    for name, code, args in programs():
        runs.append(
            f"timeout 60 {STRATA_BIN} ocr -n 2 {BIN / ('ocr_dist_' + name)} {' '.join(args)} "
            f'> {tmp_path / name}.out 2>&1; echo "{name} $? {code}"'
        )
    script = tmp_path / "all.sh"
    script.write_text(
        f'export STRATA_SHM_DIR={shm_dir} STRATA_MPIEXEC="$STRATA_EMU_MPIEXEC -hosts n0,n1"\n'
        + "\n".join(runs)
        + "\n"
    )
    run = emulate(script, 280)
    assert "checked" in run.stderr, run.stderr
    results = re.findall(r"^(\w+) (\d+) (\d+)$", run.stdout, re.MULTILINE)
    assert len(results) == len(programs()), run.stdout + run.stderr
    failed = [(name, got, want) for name, got, want in results if got != want]
    details = "\n".join(
        f"{n}: exit {g}, expected {w}\n{(tmp_path / (n + '.out')).read_text()}" for n, g, w in failed
    )
    assert not failed, details
    assert leftovers(shm_dir, run) == []


# The examples and their checks: tests/ocr/apps/check.py against numpy, the reduction itself.
CHECK = f"{REPO / '.venv' / 'bin' / 'python'} {REPO / 'tests' / 'ocr' / 'apps' / 'check.py'}"
EXAMPLES = {
    "stencil": f"{CHECK} stencil --n 96 --q 4 --steps 12 -- {{run}} {BIN / 'ocr_dist_app_stencil'}",
    "cholesky": f"{CHECK} cholesky --n 96 --tile 24 -- {{run}} {BIN / 'ocr_dist_app_cholesky'}",
    "reduction": f"{{run}} {BIN / 'ocr_dist_app_reduction'} 2000 4",
}


def test_the_distributed_examples_match_their_serial_references_on_two_emulated_nodes(
    tmp_path, shm_dir, emulation_ready
):
    runs = [
        f'timeout 100 {command.format(run=f"{STRATA_BIN} ocr -n 2")} > {tmp_path / name}.out 2>&1; echo "{name} $?"'
        for name, command in EXAMPLES.items()
    ]
    script = tmp_path / "examples.sh"
    script.write_text(
        f'export STRATA_SHM_DIR={shm_dir} STRATA_MPIEXEC="$STRATA_EMU_MPIEXEC -hosts n0,n1"\n'
        + "\n".join(runs)
        + "\n"
    )
    run = emulate(script, 280)
    results = dict(re.findall(r"^(\w+) (\d+)$", run.stdout, re.MULTILINE))
    assert set(results) == set(EXAMPLES), run.stdout + run.stderr
    failed = {name: (tmp_path / f"{name}.out").read_text() for name, code in results.items() if code != "0"}
    assert not failed, failed
    assert leftovers(shm_dir, run) == []


def test_a_rank_killed_on_one_emulated_node_is_named_on_the_other(tmp_path, shm_dir, emulation_ready):
    out = tmp_path / "job.out"
    script = tmp_path / "kill.sh"
    # Rank 1 runs on n1; once both ranks printed their pids, it is SIGKILLed.
    script.write_text(
        textwrap.dedent(f"""\
        export STRATA_SHM_DIR={shm_dir}
        STRATA_MPIEXEC="$STRATA_EMU_MPIEXEC -hosts n0,n1" timeout 90 {STRATA_BIN} ocr -n 2 \\
            --db-placement shared {BIN / "ocr_dist_keeps_every_rank_busy"} 60 > {out} 2>&1 &
        job=$!
        for i in $(seq 1 300); do grep -q "rank 1 pid" {out} && break; sleep 0.1; done
        sleep 1
        ls {shm_dir} | wc -l > {tmp_path / "segments-before-kill"}
        kill -9 $(sed -n 's/^rank 1 pid //p' {out})
        wait $job
        echo "job exited $?"
        """)
    )
    run = emulate(script, 200)
    output = out.read_text()
    assert "job exited 0" not in run.stdout, output
    assert re.search(r"strata-ocr: rank 0: peer_dead: rank 1 \(node n1\) of 2 died: .+", output), (
        output + run.stderr
    )
    made = int((tmp_path / "segments-before-kill").read_text())
    assert made > 0, f"no segment in {shm_dir} before the kill: the test would not see one left\n{output}"
    assert leftovers(shm_dir, run) == [], output
