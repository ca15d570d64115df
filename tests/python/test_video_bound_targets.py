# SPDX-License-Identifier: MIT
"""bench/video/report.py's issue-29 targets: the fastest implementation and the DSM against the kernel + link
bound, and on the heavy configuration the fastest distributed run against the serial run. They judge only the
runs that record `kernel_passes` (made after they were named), and a heavy run is judged on them alone."""

from __future__ import annotations

import sys

from conftest import REPO

sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "bench" / "video"))
import report  # noqa: E402


def impl(job_s: float, bound_s: float, gateway_bound_s: float = 2.0) -> dict:
    return {
        "job_s": job_s,
        "over_ideal": job_s / 0.5,
        "over_bound": job_s / bound_s,
        "over_gateway_bound": job_s / gateway_bound_s,
        "load_balance_distance": 0.05,
        "messages": 100.0,
        "failures": 0,
        "outputs_match_serial": True,
    }


def summary(zmq_s: float, dsm_s: float, serial_s: float, bound_s: float = 1.0) -> dict:
    return {
        "hd": {
            "serial_job_s": serial_s,
            "impls": {
                "zmq": impl(zmq_s, bound_s),
                "dsm": impl(dsm_s, bound_s),
                "mpi-async-multi": impl(9.0, bound_s),
            },
        }
    }


def test_a_run_before_the_bound_targets_were_named_is_judged_without_them():
    got = report.verdicts(summary(1.2, 1.4, 2.0), {"impls": ["zmq", "dsm"]})
    assert "best_vs_bound" not in got and "dsm_vs_bound" not in got and "distribution_pays" not in got
    assert "dsm_vs_zmq" in got
    assert "best_vs_gateway_bound" not in report.verdicts(summary(1.2, 1.4, 2.0), {"kernel_passes": 1})


def test_the_fastest_and_the_dsm_meet_the_bound_targets_at_their_limits_and_miss_just_beyond():
    met = report.verdicts(summary(1.25, 1.5, 2.0), {"kernel_passes": 1})
    assert met["best_vs_bound"]["met"] and met["best_vs_bound"]["best"] == "zmq"
    assert met["dsm_vs_bound"]["met"]
    assert "distribution_pays" not in met  # only on the heavy configuration
    missed = report.verdicts(summary(1.26, 1.51, 2.0), {"kernel_passes": 1})
    assert not missed["best_vs_bound"]["met"] and not missed["dsm_vs_bound"]["met"]


def test_a_heavy_run_is_judged_on_the_serial_speedup_and_the_bound_alone():
    config = {"kernel_passes": 25, "heavy": True}
    met = report.verdicts(summary(5.0, 6.0, 6.5), config)
    assert set(met) == {"outputs_identical_heavy", "best_vs_bound", "dsm_vs_bound", "distribution_pays"}
    assert met["distribution_pays"]["speedup"] == 1.3 and met["distribution_pays"]["met"]
    missed = report.verdicts(summary(5.0, 6.0, 6.45), config)
    assert not missed["distribution_pays"]["met"]
    rows = {r["id"]: r for r in report.target_rows(missed)}
    assert rows["distribution-pays"]["met"] is False
    assert "serial 6.45 s" in rows["distribution-pays"]["measured"]


def test_the_gateway_bound_adds_the_gateways_decoding_and_encoding_before_its_share_of_the_kernels():
    # The gateway takes 10 ms a frame to filter, n1 20 ms; the serial run took 0.5 s beyond its kernels.
    size = {"frames": 100, "frame_bytes": 1e6, "kernel_s": {"gw": 0.01, "n1": 0.02}, "serial_job_s": 1.5}
    assert report.gateway_work_s(size, "gw") == 0.5
    # Without a link limit: (T - 0.5) / 0.01 + T / 0.02 = 100 frames, so T = 1.0 s.
    assert abs(report.gateway_bound(size, "gw", None) - 1.0) < 1e-9
    # A link of 20 frames a second takes n1's share down to 20 T: (T - 0.5) / 0.01 + 20 T = 100, T = 1.25 s.
    assert abs(report.gateway_bound(size, "gw", 2e7) - 1.25) < 1e-9
    assert report.gateway_bound({k: v for k, v in size.items() if k != "serial_job_s"}, "gw", None) is None


def test_the_gateway_bound_targets_judge_only_runs_that_record_them_and_meet_at_their_limits():
    config = {"kernel_passes": 1, "gateway_bound": True}
    met = report.verdicts(summary(2.5, 3.0, 4.0), config)
    assert met["best_vs_gateway_bound"]["met"] and met["best_vs_gateway_bound"]["best"] == "zmq"
    assert met["dsm_vs_gateway_bound"]["met"]
    assert "best_vs_bound" in met  # the kernel + link bound's rows stay beside them
    missed = report.verdicts(summary(2.52, 3.02, 4.0), config)
    assert not missed["best_vs_gateway_bound"]["met"] and not missed["dsm_vs_gateway_bound"]["met"]
    rows = {r["id"]: r for r in report.target_rows(missed)}
    assert rows["dsm-vs-gateway-bound"]["measured"] == "1.51×"
