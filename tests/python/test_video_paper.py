# SPDX-License-Identifier: MIT
"""bench/video/run --paper (paper 003 at its own scale): the boards keep the paper's relative speeds within
two cores, the paper's method gives back the paper's own ideal times, the report sets the paper's figures
beside strata's and regenerates byte for byte, and (as root) the harness runs on the 8 emulated nodes at a
tiny size, writes that report and leaves nothing behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from capability import require
from conftest import REPO
from emulation_support import emulation_leftovers

SUITE = REPO / "bench" / "video"
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(SUITE))
import paper  # noqa: E402
import report  # noqa: E402

SIZES = {"hd": (1920, 1080), "uhd1": (3840, 2160), "uhd2": (7680, 4320)}


def test_the_boards_keep_the_papers_relative_speeds_within_two_cores():
    quotas = {e.split("=")[0]: float(e.split("=")[1]) for e in paper.nodes_spec().split(",")}
    speeds = {node: p for node, _, p in paper.BOARDS}
    assert list(quotas) == ["i7", "tx2", "xu3", "xu4", "kirin1", "kirin2", "rpi1", "rpi2"]
    assert max(quotas.values()) <= 100 and sum(quotas.values()) <= 200
    # As emulate sets them: microseconds per 20 ms period (100 ms under 5 %), whole numbers.
    granted = {n: int(q * 200) / 20000 if q >= 5 else int(q * 1000) / 100000 for n, q in quotas.items()}
    for node, p in speeds.items():
        assert granted[node] / granted["rpi1"] == pytest.approx(p, rel=5e-4), node
    # The boards add up to UHD-2's ΣP of Table 2 (1306 frames / α 53.0).
    assert sum(speeds.values()) == pytest.approx(1306 / 53.0, abs=1e-9)


def test_the_papers_method_on_its_boards_gives_its_uhd2_ideal_time_and_shares():
    # Table 2 at UHD-2, where the boards' ΣP is the paper's: a board's time per frame is the Raspberry Pi's
    # over its P, and the Raspberry Pi's is the ideal time over α (max(α·P_n·t_n) = α·t_RPI).
    fig = paper.PAPER
    t_rpi = fig["ideal_s"]["uhd2"] / fig["alpha"]["uhd2"]
    kernel = {node: t_rpi / p for node, _, p in paper.BOARDS}
    got = report.ideal_of({"kernel_s": kernel, "frames": fig["frames"]["uhd2"]})
    assert got["time_s"] == pytest.approx(247.0, abs=0.05)
    assert got["frames"]["rpi1"] == pytest.approx(53.0, abs=0.05)  # α: the reference's share
    assert got["frames"]["i7"] == pytest.approx(13 * 53.0, abs=0.5)


def synthetic_results(impls: list[str], frames: dict[str, int]) -> dict:
    """A results.json as driver.py writes it, for the 8 boards, with made-up but consistent figures."""
    nodes = [n for n, _, _ in paper.BOARDS]
    speeds = {n: p for n, _, p in paper.BOARDS}
    data = {
        "config": {
            **paper.config(paper.nodes_spec(), "1gbit", "bench/video/run --paper", False),
            "date": "2026-12-01T00:00:00Z",
            "nodes": nodes,
            "impls": impls,
            "repeats": 1,
        },
        "sizes": {},
        "records": [],
    }
    for size, n in frames.items():
        w, h = SIZES[size]
        per_pixel = 0.5e-9 * 13  # the i7's kernel time per pixel at one core
        kernel = {node: w * h * per_pixel / speeds[node] for node in nodes}
        data["sizes"][size] = {"width": w, "height": h, "frames": n, "frame_bytes": w * h, "kernel_s": kernel,
                               "serial_wall_s": 1.0, "serial_md5": "0"}  # fmt: skip
        for k, impl in enumerate(impls):
            job = (1 + k) * n * w * h / 125e6
            share = [n - 7 * (n // 8)] + [n // 8] * 7
            ranks = [{"role": "input", "node": nodes[0], "first_decode_unix": 100.0, "frames": 0, "busy_s": 0,
                      "wait_s": 0, "messages_sent": n, "bytes_sent": n * w * h},
                     {"role": "output", "node": nodes[0], "done_unix": 100.0 + job, "frames": 0, "busy_s": 0,
                      "wait_s": 0, "messages_sent": 1, "bytes_sent": 0}]  # fmt: skip
            ranks += [
                {"role": "worker", "node": node, "frames": f, "busy_s": f * kernel[node], "wait_s": 0.5,
                 "messages_sent": 2 * f, "bytes_sent": f * w * h}
                for node, f in zip(nodes, share)
            ]  # fmt: skip
            record = {"impl": impl, "size": size, "exit": 0, "wall_s": job + 3, "ranks": ranks, "repeat": 0,
                      "links": [{"node": node, "received": 0, "sent": 0} for node in nodes], "job_s": job,
                      "output_md5": "0", "output_matches_serial": True}  # fmt: skip
            if impl.endswith("-log"):
                record.update(events=50 * n, events_dropped=0)
            data["records"].append(record)
    return data


def write_report(tmp_path: Path, data: dict) -> tuple[str, dict]:
    results = tmp_path / "results.json"
    results.write_text(json.dumps(data))
    subprocess.run(
        [
            sys.executable,
            str(SUITE / "paper_report.py"),
            str(results),
            "--out-dir",
            str(tmp_path),
            "--duration-s",
            "600",
        ],
        check=True,
    )
    return (tmp_path / "results.md").read_text(), json.loads(results.read_text())


def test_the_report_sets_the_papers_figures_beside_strata_s(tmp_path):
    impls = ["mpi-sync", "mpi-async-multi", "zmq", "dsm", "dsm-log", "dsm-4peers"]
    md, doc = write_report(tmp_path, synthetic_results(impls, {"hd": 40, "uhd1": 12, "uhd2": 4}))
    for section in ("## The emulated platform", "## Frames", "## The ideal time", "## Fig. 2: job times",
                    "## Messages (§4)", "## Fig. 3", "## Load balancing", "## The DSM's event log"):  # fmt: skip
        assert f"\n{section}" in md, section
    # The paper's own figures are there: Table 2's ideal times and α, Fig. 2's ZeroMQ, §4's messages.
    for figure in ("| 20.8 |", "| 61.3 |", "| 247.0 |", "| 60.9 |", "| 731 |", "| 568 |", "| 39000 |"):
        assert figure in md, figure
    # ZeroMQ (the third implementation, 3x the first's job time) over the paper's ideal at UHD-2: 568/247.
    zmq = next(r for r in doc["comparison"]["jobs"] if r["impl"] == "zmq" and r["size"] == "uhd2")
    assert zmq["paper_over_ideal"] == pytest.approx(568 / 247.0)
    assert zmq["job_s"] == pytest.approx(3 * 4 * 7680 * 4320 / 125e6)
    claims = {c["claim"]: c for c in doc["comparison"]["claims"]}
    assert claims["ZeroMQ is the fastest at every size"]["strata"] == {"hd": "mpi-sync", "uhd1": "mpi-sync",
                                                                       "uhd2": "mpi-sync"}  # fmt: skip
    assert claims["the best MPI over the best S-DSM"]["strata"]["hd"] == pytest.approx(1 / 4)
    # The measured speeds are the boards' (the synthetic kernel times follow them exactly).
    platform = {r["node"]: r for r in doc["comparison"]["platform"]}
    assert platform["i7"]["measured_p"]["uhd1"] == pytest.approx(13.0)
    assert doc["targets"] == [] and doc["duration_s"] == 600
    assert (tmp_path / "results.png").stat().st_size > 0


def test_the_report_regenerates_byte_for_byte(tmp_path):
    md, _ = write_report(tmp_path, synthetic_results(["zmq", "dsm"], {"hd": 16}))
    subprocess.run(
        [
            sys.executable,
            str(SUITE / "paper_report.py"),
            str(tmp_path / "results.json"),
            "--out-dir",
            str(tmp_path),
        ],
        check=True,
    )
    assert (tmp_path / "results.md").read_text() == md


def emulate_pid_of(run: subprocess.Popen) -> int | None:
    """The pid of the emulate the run script started (its child running strata-video-emulate), or None."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == run.pid and b"emulate" in cmdline:
            return int(stat.parent.name)
    return None


@pytest.mark.timeout(400)
def test_the_paper_run_on_8_emulated_nodes_writes_its_report_and_leaves_nothing(tmp_path):
    require(os.geteuid() == 0, "root (network namespaces, tc, cgroups)")
    require(Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us").exists(), "cgroup v1 cpu controller")
    bin_dir = Path(os.environ.get("STRATA_BIN", REPO / "build/default/bin/strata")).parent
    require(
        (bin_dir / "strata-video").exists(),
        f"{bin_dir}/strata-video (cmake --build ... --target strata_video)",
    )
    out = tmp_path / "paper"
    run = subprocess.Popen(
        [str(SUITE / "run"), "--paper", "--sizes", "hd", "--frames", "hd=8", "--impls", "zmq,dsm-4peers-log",
         "--out", str(out)],
        env={**os.environ, "STRATA_BIN_DIR": str(bin_dir)}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True,
    )  # fmt: skip
    emulate = None
    deadline = time.monotonic() + 360
    while run.poll() is None and time.monotonic() < deadline:
        emulate = emulate or emulate_pid_of(run)
        time.sleep(0.2)
    if run.poll() is None:
        run.kill()
    output = run.communicate()[0]
    assert run.returncode == 0, output
    assert emulate is not None, "the run script started no emulate"
    assert emulation_leftovers(emulate) == []
    doc = json.loads((out / "results.json").read_text())
    assert doc["config"]["nodes"] == [n for n, _, _ in paper.BOARDS]
    for impl in ("zmq", "dsm-4peers-log"):
        v = doc["summary"]["hd"]["impls"][impl]
        assert v["failures"] == 0 and v["outputs_match_serial"], impl
        assert sum(v["frames_per_node"].values()) == 8, impl
    md = (out / "results.md").read_text()
    assert "## Fig. 2: job times" in md and "| 1296 | 8 |" in md
