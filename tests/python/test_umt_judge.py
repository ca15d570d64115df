# SPDX-License-Identifier: MIT
"""bench/umt/judge.py's compute-only figures: the overhead is the ratio of the medians against `off`, and the
A/A figure beside it compares off's odd-numbered runs with its even-numbered ones, so a reader sees the
resolution of the overhead on the machine that measured it."""

from __future__ import annotations

import importlib.util
import sys

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
