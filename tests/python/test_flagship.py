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
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pytest
from capability import require
from conftest import REPO
from emulation_support import emulation_leftovers, run_emulated

sys.path.insert(0, str(REPO / "examples" / "flagship"))
import checkpoints  # noqa: E402  (the reader of the heat program's checkpoint windows)

pytestmark = pytest.mark.timeout(300)
STRATA_BIN = Path(os.environ.get("STRATA_BIN", REPO / "build" / "default" / "bin" / "strata"))
BIN = STRATA_BIN.parent
DRIVER = REPO / "examples" / "flagship" / "flagship.py"
N, Q, STEPS, K, M, KILL_AT, STEER_BELOW = 64, 4, 1000, 50, 25, 100, 90.0


def reference(
    n: int, steps: int, m: int, steer_below: float
) -> tuple[dict[int, np.ndarray], dict[int, float]]:
    """The field at every step and the alpha decided after each frame: 100 in the disk of
    radius n/4 around the centre, then explicit steps of u + alpha (N + S + W + E - 4u), 0
    outside the grid; after the frame of step s (every m steps), alpha is 0.25 for the next m
    steps when the field's maximum is below steer_below, else 0.2."""
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    u = np.where((i - n // 2) ** 2 + (j - n // 2) ** 2 < (n // 4) ** 2, 100.0, 0.0)
    fields, decided, alpha = {0: u.copy()}, {}, 0.2
    for step in range(1, steps + 1):
        if (step - 1) % m == 0:
            alpha = decided[step - 1] = 0.25 if u.max() < steer_below else 0.2
        p = np.pad(u, 1)
        u = u + alpha * (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4.0 * u)
        fields[step] = u.copy()
    return fields, decided


@pytest.fixture
def shm_dir():
    path = Path("/dev/shm") / f"strata-flagship-test-{uuid.uuid4().hex[:12]}"
    path.mkdir(mode=0o700)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def zombie(pid: str) -> bool:
    """Dead, not yet reaped: the killed job's ranks, orphaned when their proxies died with
    mpiexec, wait for init, which reaps late on some machines (seconds here). Not left running."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # gone since pgrep saw it
    return stat[stat.rindex(")") + 2] == "Z"


def leftovers(shm_dir: Path, emulate_pid: int | None = None) -> list[str]:
    """What a run left: segments in its own directory, the flagship's processes, and its own
    emulation's namespaces, links and cgroups (apps/video/emulate names them after its pid)."""
    found = [f"segment file {p.name}" for p in shm_dir.iterdir()]
    for name in ("flagship_heat", "flagship_steer"):
        procs = subprocess.run(["pgrep", "-x", name], capture_output=True, text=True).stdout
        found += [f"process {name} {pid}" for pid in procs.split() if not zombie(pid)]
    return found + (emulation_leftovers(emulate_pid) if emulate_pid is not None else [])


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
    out = tmp_path / "run"
    script = tmp_path / "flagship.sh"
    script.write_text(
        f"export STRATA_SHM_DIR={shm_dir}\n"
        f"{sys.executable} {DRIVER} --bin {BIN} --out {out} --n {N} --q {Q} --steps {STEPS} "
        f"--k {K} --m {M} --steer-below {STEER_BELOW} --kill-at {KILL_AT}\n"
    )
    emulation = run_emulated(["--nodes", "n0=none,n1=none", "--rate", "none", "--", "sh", str(script)], 280)
    assert emulation.returncode == 0, emulation.stdout + emulation.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["nodes"] == "emulated n0,n1"
    assert report["killed"]["killed_after_step"] == KILL_AT
    # The killed job's producer died under the analysis and the steering job, which say so and fail.
    assert report["killed"]["analysis_exit"] == 1
    assert report["killed"]["steer_exit"] not in (None, 0)
    start = report["restarted_from_step"]
    assert KILL_AT <= start < STEPS and start % K == 0, report

    frame_steps = list(range(start, STEPS + 1, M))
    want, decided = reference(N, STEPS, M, STEER_BELOW)
    # The console on n1 read the global statistics through the DSM and decided as the reference.
    steering = {d["step"]: d["alpha"] for d in report["steering"]}
    assert steering == {s: a for s, a in decided.items() if s >= start}
    assert {d["node"] for d in report["steering"]} == {"n1"}
    # The sizes make the steering change alpha during the run (where the restart falls depends on
    # when the kill came: past the change, the restarted part decides 0.25 only).
    assert set(decided.values()) == {0.2, 0.25}, "the sizes must make the steering change alpha"
    field = np.fromfile(out / "field.bin", dtype="<f8").reshape(N, N)
    np.testing.assert_allclose(field, want[STEPS], rtol=1e-12, atol=1e-12)

    # The checkpoint windows keep each tile's last three saves (the steps below STEPS that are multiples
    # of K), each holding the reference's field at its step, tile by tile.
    b = N // Q
    saved = checkpoints.read(out / "ckpt", N, Q)
    kept = list(range((STEPS - 1) // K * K, 0, -K))[:3]
    for t in range(Q * Q):
        assert sorted(saved[t]) == sorted(kept), (t, sorted(saved[t]))
        i, j = divmod(t, Q)
        for s in kept:
            want_tile = want[s][i * b : (i + 1) * b, j * b : (j + 1) * b]
            np.testing.assert_allclose(
                saved[t][s], want_tile, rtol=1e-12, atol=1e-12, err_msg=f"tile {t} step {s}"
            )

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
    assert leftovers(shm_dir, emulation.pid) == []


def test_a_bad_grid_size_is_refused_naming_it(tmp_path, ready):
    run = subprocess.run(
        [str(STRATA_BIN), "ocr", "-n", "1", str(BIN / "flagship_heat"), "63", "4", "10", "5", "5", str(tmp_path)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert run.returncode == 2, run.stdout + run.stderr
    assert "heat: n=63: must be even and a multiple of q=4" in run.stdout + run.stderr
    assert list(tmp_path.iterdir()) == []


def test_an_analysis_killed_mid_run_ends_the_run_with_an_error_naming_it(tmp_path, shm_dir, ready):
    out = tmp_path / "run"
    driver = subprocess.Popen(
        [sys.executable, str(DRIVER), "--bin", str(BIN), "--out", str(out), "--n", "64", "--steps", "3000",
         "--k", "100", "--m", "50"],
        env={**os.environ, "STRATA_SHM_DIR": str(shm_dir)}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True,
    )  # fmt: skip
    # Frames flow once a checkpoint past the first frames is on disk; then the analysis dies.
    for _ in range(3000):
        if checkpoints.reached(checkpoints.read(out / "ckpt", 64, 4), 4, 300) or driver.poll() is not None:
            break
        time.sleep(0.01)
    analysis = subprocess.run(["pgrep", "-f", f"analysis.py .*--out {out}"], capture_output=True, text=True)
    assert analysis.stdout.split(), "no analysis process to kill"
    for pid in analysis.stdout.split():
        os.kill(int(pid), signal.SIGKILL)
    said = driver.communicate(timeout=120)[0]
    assert driver.returncode == 1, said
    assert "flagship: heat: exit 5" in said, said
    # Named by the heat program (its send to the port fails) or by the steering job, the port's other
    # consumer (its receive fails, it ends, and the heat program then finds the port `steer` closed):
    # whichever comes first.
    assert re.search(
        r"(send to|receive from) port frames: peer_dead: .*consumer 0 \(user \d+ \(pid \d+ 'python\S*'\)\) died",
        said,
    ), said
    assert leftovers(shm_dir) == []


def test_a_run_refused_by_the_heat_program_stops_its_companions_and_leaves_nothing(tmp_path, shm_dir, ready):
    # The analysis and the steering job start first and wait for frames that never come.
    run = subprocess.run(
        [sys.executable, str(DRIVER), "--bin", str(BIN), "--out", str(tmp_path / "run"), "--n", "63"],
        env={**os.environ, "STRATA_SHM_DIR": str(shm_dir)}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 1, run.stdout + run.stderr
    assert "flagship: heat: exit 2: heat: n=63: must be even and a multiple of q=4" in run.stderr, run.stderr
    assert leftovers(shm_dir) == []
    assert not subprocess.run(["pgrep", "-f", f"analysis.py .*--out {tmp_path}"], capture_output=True).stdout
