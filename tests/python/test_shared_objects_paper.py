# SPDX-License-Identifier: MIT
"""bench/shared-objects/run --paper (paper 001's Fig. 6 at the paper's scale, issue 30): the harness runs
every configuration through `strata run` at tiny sizes, skips what does not fit in memory without starting
it, and the report sets the paper's figures beside strata's, says what a subset left out and estimates the
full spec from the run's own rates."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from capability import require
from conftest import REPO

SUITE = REPO / "bench" / "shared-objects"
RUN = SUITE / "run"
PYTHON = Path(os.environ.get("STRATA_VENV", REPO / ".venv")) / "bin" / "python"
BIN_DIR = Path(os.environ.get("STRATA_BIN", REPO / "build" / "default" / "bin" / "strata")).parent
MB = 1_000_000

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def paper(monkeypatch):
    """bench/shared-objects/paper.py (other suites have a paper.py and a bench.py of their own)."""
    monkeypatch.syspath_prepend(str(REPO / "bench"))
    monkeypatch.syspath_prepend(str(SUITE))
    for name in ("paper", "bench"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    yield importlib.import_module("paper")
    for name in ("paper", "bench"):
        sys.modules.pop(name, None)


def document(paper, sizes, iterations, repeats, it_s_at_1mb=100.0) -> dict:
    """A finished run's results.json whose every configuration made `it_s_at_1mb` iterations/s at 1 MB
    (shm), a quarter of it (MPI), at the same MB/s at every size, and whose runs took no launch time."""
    configs = paper.plan(sizes, iterations, ["shm", "mpi"])
    runs = []
    for c in configs:
        for repeat in range(repeats):
            for method, factor in (("shm", 1.0), ("mpi", 0.25)):
                rate = it_s_at_1mb * factor * MB / c["size"]
                runs.append(
                    {
                        "shape": c["shape"],
                        "tasks": c["tasks"],
                        "method": method,
                        "data_size": c["size"],
                        "iterations": c["iterations"],
                        "throughput_mb_s": rate * paper.edges(c["shape"], c["tasks"]) * c["size"] / MB,
                        "iterations_per_s": rate,
                        "seconds": c["iterations"] / rate,
                        "process_s": (c["iterations"] + paper.WARMUP) / rate,
                        "repeat": repeat,
                    }
                )
    free = {"mem_available": 22 << 30, "shm_free": 24 << 30, "shm_dir_size": 24 << 30}
    return {
        "command": "bench/shared-objects/run --paper",
        "date": "2026-12-01T00:00:00+00:00",
        "machine": {"cpus": 2, "kernel": "test", "memory_bytes": 24 << 30, "at_start": free},
        "paper": paper.PAPER_FIG6,
        "settings": {
            "sizes": sizes,
            "iterations": iterations,
            "repeats": repeats,
            "methods": ["shm", "mpi"],
            "warmup": paper.WARMUP,
            "slots": paper.SLOTS,
            "memory_margin_bytes": paper.MARGIN,
        },
        "configurations": configs,
        "complete": True,
        "seconds": 60.0,
        "load_average": {"start": [1.0, 1.0, 1.0], "now": [1.0, 1.0, 1.0]},
        "runs": runs,
        "skipped": [],
        "failures": [],
    }


def report(doc: dict, out: Path) -> str:
    (out / "results.json").write_text(json.dumps(doc))
    subprocess.run(
        [str(PYTHON), str(SUITE / "paper_report.py"), str(out / "results.json"), "--out-dir", str(out)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return (out / "results.md").read_text()


def test_the_report_sets_the_papers_maxima_beside_stratas_own(paper, tmp_path):
    md = report(document(paper, [1 * MB, 10 * MB], [1024, 2048], 2), tmp_path)
    # The highest iterations/s is at the smallest size: 100 (shm) and 25 (MPI) at 1 MB.
    assert (
        "| simple | 1537.3 | 1726.3 | 0.89× | 100.0 (1 MB, 1024 it.) | 25.0 (1 MB, 1024 it.) | 4.00× |" in md
    )
    assert "| scatter-gather(9) | 666.8 | 360.6 | 1.85× | 100.0 (1 MB, 1024 it.) |" in md
    assert "shm above MPI in 12 of 12 configurations." in md
    assert (tmp_path / "fig6_paper.png").stat().st_size > 0


def test_a_subset_says_what_it_left_out_and_the_full_spec_is_estimated_from_its_rates(paper, tmp_path):
    md = report(document(paper, [1 * MB], [1024], 1), tmp_path)
    assert "left out sizes 10 MB, 100 MB, 1 GB; iteration counts 2048; 4 of the paper's 5 repeats." in md
    # Every run: (iterations + 2 warmup) / rate, the rate falling as 1/size from 100 it/s (shm) and 25 (MPI)
    # at 1 MB: 5 repeats x 3 shapes x (1 + 4) s per it/s x (1026 + 2050) x (1 + 10 + 100 + 1000) / 100 s.
    full = 5 * 3 * (1 + 4) * (1026 + 2050) * 1111 / 100
    assert f"the paper's full spec takes {full / 3600:.1f} h of runs" in md


def test_the_report_is_the_same_bytes_when_regenerated(paper, tmp_path):
    first = report(document(paper, [1 * MB], [1024, 2048], 2), tmp_path)
    png = (tmp_path / "fig6_paper.png").read_bytes()
    again = json.loads((tmp_path / "results.json").read_text())
    assert report(again, tmp_path) == first
    assert (tmp_path / "fig6_paper.png").read_bytes() == png


def test_the_largest_configurations_need_what_their_buffers_hold(paper):
    gb = 1000 * MB
    # scatter-gather(9): 8 producers (t0..t7), 14 edges; MPI: a send buffer per producer, a receive
    # buffer (data and an 8-byte stamp) per edge. shm: 2 slots per producer, each 4 KiB + the data in pages.
    assert paper.memory_needed("scatter-gather", 9, "mpi", gb) == 8 * gb + 14 * (gb + 8)
    assert paper.memory_needed("scatter-gather", 9, "shm", gb) == 8 * 2 * (4096 + 244141 * 4096)
    assert paper.memory_needed("pipeline", 9, "mpi", gb) == 8 * gb + 8 * (gb + 8)
    assert paper.memory_needed("simple", 2, "threads", gb) == 2 * gb
    roomy = {"mem_available": 23 << 30, "shm_free": 24 << 30, "shm_dir_size": 24 << 30}
    assert paper.does_not_fit("scatter-gather", 9, "mpi", gb, roomy) is None
    tight = dict(roomy, mem_available=21 << 30)
    assert "needs 20.5 GiB of memory, 21.0 GiB available" in paper.does_not_fit(
        "scatter-gather", 9, "mpi", gb, tight
    )
    small_shm = dict(roomy, shm_free=10 << 30)
    assert "in the segment directory" in paper.does_not_fit("pipeline", 9, "shm", gb, small_shm)
    assert paper.does_not_fit("pipeline", 9, "mpi", gb, small_shm) is None


def test_a_configuration_that_does_not_fit_is_skipped_without_starting_it(paper, monkeypatch, tmp_path):
    monkeypatch.setattr(
        paper, "free_memory", lambda: {"mem_available": 1 << 30, "shm_free": 1 << 30, "shm_dir_size": 1 << 30}
    )
    written = []
    configs = paper.plan([1000 * MB], [1024], ["shm", "mpi"])
    # A bin directory without strata: a run that started would fail the test with FileNotFoundError.
    runs, skipped, failures = paper.run_plan(tmp_path, configs, 2, lambda *a: written.append(a))
    assert runs == [] and failures == []
    assert len(skipped) == 3 * 2 * 2
    assert all("GiB of memory" in s["reason"] for s in skipped)
    assert len(written) == 3  # after each configuration


@pytest.mark.parametrize(
    "args",
    [["--paper", "--quick"], ["--paper-sizes", "1MB"], ["--estimate"], ["--paper", "--ratios"]],
)
def test_the_run_script_refuses_options_that_do_not_go_together(args):
    done = subprocess.run([str(RUN), *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "see --help" in done.stderr


def test_the_harness_runs_every_configuration_through_strata_run_at_tiny_sizes(tmp_path):
    require((BIN_DIR / "strata").exists(), f"strata built in {BIN_DIR}")
    require(shutil.which("mpiexec") is not None, "mpiexec (MPICH)")
    env = {k: v for k, v in os.environ.items() if k != "STRATA_BENCH_COMMAND"} | {
        "STRATA_BIN_DIR": str(BIN_DIR)
    }
    args = [
        "--paper",
        "--paper-sizes",
        "64KB",
        "--paper-iterations",
        "4,8",
        "--repeats",
        "1",
        "--out",
        str(tmp_path),
    ]
    done = subprocess.run([str(RUN), *args], capture_output=True, text=True, timeout=280, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    doc = json.loads((tmp_path / "results.json").read_text())
    assert doc["complete"] and doc["failures"] == [] and doc["skipped"] == []
    assert (
        doc["command"]
        == "bench/shared-objects/run --paper --repeats 1 --paper-sizes 64KB --paper-iterations 4,8"
    )
    ran = sorted((r["shape"], r["tasks"], r["method"], r["data_size"], r["iterations"]) for r in doc["runs"])
    assert ran == sorted(
        (shape, tasks, method, 64_000, its)
        for shape, tasks in (("simple", 2), ("pipeline", 9), ("scatter-gather", 9))
        for method in ("shm", "mpi")
        for its in (4, 8)
    )
    assert all(r["throughput_mb_s"] > 0 and r["process_s"] >= r["seconds"] for r in doc["runs"])
    md = (tmp_path / "results.md").read_text()
    for row in ("| simple | 64 KB |", "| pipeline(9) | 64 KB |", "| scatter-gather(9) | 64 KB |"):
        assert md.count(row) == 2, row
    assert "left out sizes 1 MB, 10 MB, 100 MB, 1 GB; iteration counts 1024, 2048" in md
