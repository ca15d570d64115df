# SPDX-License-Identifier: MIT
"""The flagship workflow (examples/flagship, docs/getting-started/flagship.md) at a small size,
checked part by part against a serial numpy reference computed here, not taken from the run:
the distributed heat diffusion on 2 emulated nodes, SIGKILLed after a checkpoint and run again,
ends with the reference's final field; the analysis's statistics of every frame it received
by handle are the reference's at those steps; the plot is a PNG; ffmpeg's video has one frame
per frame step, of the grid's size, showing the reference's field. Nothing of the emulation
and no segment is left. Needs root (apps/video/emulate), ffmpeg and ffprobe.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest
from capability import require
from conftest import REPO

pytestmark = pytest.mark.timeout(300)
EMULATE = REPO / "apps" / "video" / "emulate"
STRATA_BIN = Path(os.environ.get("STRATA_BIN", REPO / "build" / "default" / "bin" / "strata"))
BIN = STRATA_BIN.parent
DRIVER = REPO / "examples" / "flagship" / "flagship.py"
N, Q, STEPS, K, M, KILL_AT = 64, 4, 400, 50, 25, 100


def reference(n: int, steps: list[int]) -> dict[int, np.ndarray]:
    """The field at each of `steps`: 100 in the disk of radius n/4 around the centre, then
    explicit steps of u + 0.2 (N + S + W + E - 4u), 0 outside the grid."""
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    u = np.where((i - n // 2) ** 2 + (j - n // 2) ** 2 < (n // 4) ** 2, 100.0, 0.0)
    fields = {0: u.copy()}
    for step in range(1, max(steps) + 1):
        p = np.pad(u, 1)
        u = u + 0.2 * (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4.0 * u)
        fields[step] = u.copy()
    return {s: fields[s] for s in steps}


@pytest.fixture
def shm_dir():
    path = Path("/dev/shm") / f"strata-flagship-test-{uuid.uuid4().hex[:12]}"
    path.mkdir(mode=0o700)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def leftovers(shm_dir: Path) -> list[str]:
    found = [f"segment file {p.name}" for p in shm_dir.iterdir()]
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    found += [f"namespace {line.split()[0]}" for line in netns.splitlines() if line.startswith("sv")]
    found += [f"cgroup {p}" for p in Path("/sys/fs/cgroup/cpu").glob("strata-emulate-*")]
    procs = subprocess.run(["pgrep", "-x", "flagship_heat"], capture_output=True, text=True).stdout
    found += [f"process {pid}" for pid in procs.split()]
    return found


@pytest.fixture(scope="module")
def ready():
    require(os.geteuid() == 0, "root (network namespaces, tc, cgroups)")
    require(Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us").exists(), "cgroup v1 cpu controller")
    require((BIN / "flagship_heat").exists(), f"{BIN / 'flagship_heat'} (build the default preset)")
    require(shutil.which("ffmpeg") is not None and shutil.which("ffprobe") is not None, "ffmpeg and ffprobe")


def decoded_frames(video: Path, n: int) -> np.ndarray:
    raw = subprocess.run(
        ["ffmpeg", "-v", "error", "-i", str(video), "-f", "rawvideo", "-pix_fmt", "gray", "-"],
        capture_output=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    return np.frombuffer(raw, dtype=np.uint8).reshape(-1, n, n)


def test_the_flagship_killed_after_a_checkpoint_on_two_emulated_nodes_ends_as_the_serial_reference(
    tmp_path, shm_dir, ready
):
    before = leftovers(shm_dir)
    out = tmp_path / "run"
    script = tmp_path / "flagship.sh"
    script.write_text(
        f"export STRATA_SHM_DIR={shm_dir}\n"
        f"{sys.executable} {DRIVER} --bin {BIN} --out {out} --n {N} --q {Q} --steps {STEPS} "
        f"--k {K} --m {M} --kill-at {KILL_AT}\n"
    )
    run = subprocess.run(
        [str(EMULATE), "--nodes", "n0=none,n1=none", "--rate", "none", "--", "sh", str(script)],
        capture_output=True, text=True, timeout=280,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["nodes"] == "emulated n0,n1"
    assert report["killed"]["killed_after_step"] == KILL_AT
    # The killed job's producer died under the analysis, which says so and fails.
    assert report["killed"]["analysis_exit"] == 1
    start = report["restarted_from_step"]
    assert KILL_AT <= start < STEPS and start % K == 0, report

    frame_steps = list(range(start, STEPS + 1, M))
    want = reference(N, [*frame_steps, STEPS])
    field = np.fromfile(out / "field.bin", dtype="<f8").reshape(N, N)
    np.testing.assert_allclose(field, want[STEPS], rtol=1e-12, atol=1e-12)

    stats = json.loads((out / "stats.json").read_text())
    assert [s["step"] for s in stats] == frame_steps
    for s in stats:
        u = want[s["step"]]
        got = [s["min"], s["max"], s["mean"], s["total"], s["centre"]]
        expected = [u.min(), u.max(), u.mean(), u.sum(), u[N // 2, N // 2]]
        np.testing.assert_allclose(got, expected, rtol=1e-10, err_msg=f"frame of step {s['step']}")
    assert (out / "heat.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    probe = report["video"]
    assert f"codec_name=h264|width={N}|height={N}|nb_read_frames={len(frame_steps)}" in probe, probe
    video = decoded_frames(out / "heat.mp4", N)
    assert len(video) == len(frame_steps)
    # Lossy, but the frames must show the reference's field (0..100 as 0..255), not noise.
    for frame, step in zip(video, frame_steps, strict=True):
        pixels = np.clip(np.rint(want[step] * 2.55), 0, 255)
        assert np.mean(np.abs(frame.astype(float) - pixels)) < 4.0, f"frame of step {step}"
    assert leftovers(shm_dir) == before


def test_a_bad_grid_size_is_refused_naming_it(tmp_path, ready):
    run = subprocess.run(
        [str(STRATA_BIN), "ocr", "-n", "1", str(BIN / "flagship_heat"), "63", "4", "10", "5", "5", str(tmp_path)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert run.returncode == 2, run.stdout + run.stderr
    assert "heat: n=63: must be even and a multiple of q=4" in run.stdout + run.stderr
    assert list(tmp_path.iterdir()) == []
