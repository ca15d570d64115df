# SPDX-License-Identifier: MIT
"""bench/umt/judge.py's compute-only figures: the overhead is the ratio of the medians against `off`, and the
A/A figure beside it compares off's odd-numbered runs with its even-numbered ones, so a reader sees the
resolution of the overhead on the machine that measured it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from conftest import REPO


def judge_module():
    sys.path.insert(0, str(REPO / "bench"))
    spec = importlib.util.spec_from_file_location("umt_judge", REPO / "bench" / "umt" / "judge.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def compute_only(mode: str, repeat: int, wall_s: float) -> dict:
    return {
        "experiment": "synthetic-pipe",
        "label": "share 0.00",
        "mode": mode,
        "repeat": repeat,
        "wall_s": wall_s,
    }


def test_off_against_itself_is_the_ratio_of_the_medians_of_its_odd_and_even_runs():
    judge = judge_module()
    runs = [compute_only("off", r, w) for r, w in enumerate([1.0, 1.10, 1.2, 1.12, 0.9, 1.14])]
    runs += [compute_only("ebpf", r, 5.0) for r in range(6)]  # another mode never enters it
    runs.append({"experiment": "fwi", "label": "x", "mode": "off", "repeat": 1, "wall_s": 9.0})
    # even repeats 1.0, 1.2, 0.9 (median 1.0); odd 1.10, 1.12, 1.14 (median 1.12)
    assert judge.off_against_itself(runs) == pytest.approx(12.0)


def test_off_against_itself_needs_two_runs_on_each_side():
    judge = judge_module()
    assert judge.off_against_itself([compute_only("off", r, 1.0) for r in range(3)]) is None


def test_the_compute_only_target_names_the_a_a_figure_beside_its_verdict():
    judge = judge_module()
    summary = [
        {
            "experiment": "synthetic-pipe",
            "label": "share 0.00",
            "throttle": "none",
            "mode": mode,
            "wall_s_median": wall,
            "repeats": 4,
            "speedup_vs_off": None,
        }
        for mode, wall in (("off", 1.0), ("ebpf", 1.02))
    ]
    runs = [compute_only("off", r, w) for r, w in enumerate([1.0, 1.01, 1.0, 1.01])]
    checks = judge.targets(summary, "ebpf", "off", runs)
    overhead = next(c for c in checks if c[4] == "compute-only-overhead")
    assert overhead[1] == pytest.approx(2.0)
    assert overhead[2] is False
    assert "odd-numbered runs against its even-numbered ones, the same measure: 1.00%" in overhead[0]


def row_of(id: str, measured: str, met: bool) -> dict:
    return {"id": id, "measured": measured, "met": met}


def test_a_default_target_is_met_over_the_round_only_when_every_run_met_it():
    judge = judge_module()
    earlier = [
        {
            "ref": "a",
            "targets": {
                "default-x": {"measured": "1%", "met": True},
                "default-y": {"measured": "5%", "met": False},
            },
        },
        {
            "ref": "b",
            "targets": {
                "default-x": {"measured": "2%", "met": True},
                "default-y": {"measured": "1%", "met": True},
            },
        },
    ]
    rows = [row_of("default-x", "3%", True), row_of("default-y", "2%", True), row_of("other", "9%", True)]
    got = {r["id"]: r for r in judge.over_the_round({"round": {"earlier": earlier}}, rows)}
    assert got["default-x"]["met"] is True
    assert got["default-y"]["met"] is False  # run 1 missed it, though the last run met it
    assert got["default-y"]["measured"] == "2% (runs 1–2: 5%, 1%)"
    assert got["other"] == row_of("other", "9%", True)  # not a default target: this run's own verdict


def test_a_run_outside_a_round_keeps_its_own_verdicts():
    judge = judge_module()
    rows = [row_of("default-x", "3%", False)]
    assert judge.over_the_round({}, rows) == rows


def test_a_round_refuses_an_earlier_run_of_another_command(tmp_path):
    import json
    import subprocess

    def run(date: str, command: str) -> Path:
        path = tmp_path / f"{date}.json"
        path.write_text(json.dumps({"date": date, "command": command, "verdict_mode": "ebpf", "targets": []}))
        return path

    last = run("2026-11-30T03", "bench/umt/run --repeats 9")
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "umt" / "round.py"), str(last),
         str(run("2026-11-30T01", "bench/umt/run --repeats 9")), str(run("2026-11-30T02", "bench/umt/run --repeats 5"))],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode != 0
    assert "command 'bench/umt/run --repeats 5' is not this run's" in done.stderr
    assert "round" not in json.loads(last.read_text())
