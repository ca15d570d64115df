# SPDX-License-Identifier: MIT
"""strata-video (apps/video, docs/video.md): every implementation's output frames against an
independent reference (ffmpeg-decoded frames filtered by scipy.ndimage), and bad inputs.

Runs on one machine with plain mpiexec (MPICH's shared-memory path between the ranks); the
emulated-node and killed-rank tests are in test_video_emulated.py and test_video_failures.py.
"""

from __future__ import annotations

import re
import subprocess
import time

import numpy as np
import pytest
from video_support import (
    FRAMES,
    HEIGHT,
    HYDRA_TEARDOWN,
    IMPLS,
    WIDTH,
    decode,
    launch_args,
    make_video,
    program,
    reference,
    running,
)

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    return make_video(tmp_path_factory.mktemp("video") / "in.mkv")


@pytest.fixture(scope="module")
def expected(video):
    frames = decode(video)
    assert frames.shape == (FRAMES, HEIGHT, WIDTH)
    ref = reference(frames)
    assert not np.array_equal(ref, frames), "the filter must change the frames"
    return ref


def check_output(output, expected):
    got = decode(output)
    assert got.shape == expected.shape, f"{output}: {got.shape[0]} frames, expected {expected.shape[0]}"
    for i, (g, e) in enumerate(zip(got, expected)):
        if not np.array_equal(g, e):
            bad = np.argwhere(g != e)
            pytest.fail(
                f"{output}: frame {i} differs from the reference at {len(bad)} pixels, first {bad[0]}"
            )


def test_serial_run_writes_the_reference_frames_as_ffv1(tmp_path, video, expected):
    binary = program()
    out = tmp_path / "out.mkv"
    subprocess.run([str(binary), "--impl", "serial", "-i", str(video), "-o", str(out), "--codec", "ffv1"],
                   check=True, timeout=60)  # fmt: skip
    probe = subprocess.run(
        ["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=codec_name,pix_fmt",
         "-of", "csv=p=0", str(out)],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    assert probe == "ffv1,gray"
    check_output(out, expected)


def test_the_scalar_kernel_gives_the_same_frames_as_raw_bytes(tmp_path, video, expected):
    binary = program()
    out = tmp_path / "out.raw"
    subprocess.run([str(binary), "--impl", "serial", "--kernel", "scalar", "-i", str(video), "-o", str(out)],
                   check=True, timeout=60)  # fmt: skip
    check_output(out, expected)


@pytest.mark.parametrize("name", list(IMPLS))
def test_every_implementation_writes_the_reference_frames(tmp_path, video, expected, name):
    binary = program()
    output = tmp_path / ("out.mkv" if name.endswith("sync") or name == "dsm" else "out.nut")
    codec = ["--codec", "ffv1"] if output.suffix == ".mkv" else []
    stats = tmp_path / "stats"
    stats.mkdir()
    run = subprocess.run(launch_args(name, binary, video, output, [*codec, "--stats", str(stats)]),
                         capture_output=True, text=True, timeout=90)  # fmt: skip
    assert run.returncode == 0, f"{name} failed:\n{run.stdout}\n{run.stderr}"
    check_output(output, expected)
    ranks = sorted(stats.glob("rank*.json"))
    assert len(ranks) == IMPLS[name][1]
    import json

    records = [json.loads(p.read_text()) for p in ranks]
    workers = [r for r in records if r["role"] == "worker"]
    assert sum(r["frames"] for r in workers) == FRAMES, "every frame is filtered exactly once"
    assert sum(r["messages_sent"] for r in records) > 0


def test_frames_limits_the_run_to_the_first_frames(tmp_path, video, expected):
    binary = program()
    out = tmp_path / "out.nut"
    run = subprocess.run(launch_args("mpi-async", binary, video, out, ["--frames", "5"]),
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert run.returncode == 0, run.stderr
    check_output(out, expected[:5])


def run_bad(args, ranks=None, timeout=60):
    binary = program()
    cmd = [str(binary), *args] if ranks is None else ["mpiexec", "-n", str(ranks), str(binary), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


BAD_ARGUMENTS = [
    (["--impl", "mpi-turbo", "-i", "x", "-o", "y"], "--impl=mpi-turbo: unknown implementation"),
    (["--impl", "zmq-credit", "-i", "x", "-o", "y", "--zmq-port", "5000", "--credits", "0"], "--credits=0: must be 1..64"),
    (["--impl", "serial", "-i", "x", "-o", "y", "--codec", "h264"], "--codec=h264: unknown codec"),
    (["--impl", "serial", "-i", "x", "-o", "y", "--timeout-ms", "5"], "--timeout-ms=5: must be 100..3600000"),
    (["--impl", "zmq", "-i", "x", "-o", "y"], "--zmq-port: missing for --impl=zmq"),
    (["--impl", "serial", "-i", "x", "-o", "y", "--stats", "/nonexistent/dir"], "--stats=/nonexistent/dir: not a directory"),
    (["--impl", "serial", "-o", "y"], "--input: missing"),
    (["--impl", "serial", "-i", "x", "-o", "y", "--frames", "abc"], "--frames"),
    (["--kernel-time", "19x"], "--kernel-time=19x: expected WIDTHxHEIGHT"),
    (["--impl", "mpi-sync", "-i", "x", "-o", "y", "--rank", "0", "--size", "3"], "--rank=0: --impl=mpi-sync takes its rank from MPI"),
]  # fmt: skip


@pytest.mark.parametrize("args,message", BAD_ARGUMENTS, ids=[m.split(":")[0] for _, m in BAD_ARGUMENTS])
def test_a_bad_argument_is_refused_naming_the_option_and_value(args, message):
    run = run_bad(args)
    assert run.returncode == 2, run.stderr
    assert message in run.stderr, run.stderr


def test_a_missing_input_fails_on_every_rank_naming_the_file_and_leaves_no_output(tmp_path):
    # -disable-auto-cleanup and a proxy per rank (test_video_failures.py says why): otherwise
    # mpiexec kills the other ranks as soon as rank 0 fails, before they can report. Each rank
    # reports the input's abort message or hydra's notice that rank 0 failed, whichever comes first.
    # MPICH 4.0.2's teardown (video_support.HYDRA_TEARDOWN) may SIGKILL a rank before its record:
    # tolerated only where mpiexec says so and another rank reported, as in test_video_failures.py.
    out = tmp_path / "out.nut"
    logs = tmp_path / "logs"
    logs.mkdir()
    cmd = ["mpiexec", "-disable-auto-cleanup", "-launcher", "fork", "-hosts", "127.0.0.1,127.0.0.2,127.0.0.3,127.0.0.4",
           "-ppn", "1", "-n", "4", "-genv", "UCX_TLS", "tcp,self", str(program()), "--impl", "mpi-sync",
           "-i", str(tmp_path / "nope.mkv"), "-o", str(out), "--timeout-ms", "3000", "--log-dir", str(logs)]  # fmt: skip
    # restore_signals=False keeps SIGPIPE ignored in mpiexec: its teardown then says why instead of dying.
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=60, restore_signals=False)
    said = f"--- mpiexec (exit {run.returncode}):\n{run.stdout}{run.stderr}"
    assert run.returncode != 0, said
    # mpiexec may return before every rank is gone: wait for each (a hang bound), then read the records.
    texts = {}
    for rank in range(4):
        log = logs / f"rank{rank}.log"
        found = re.search(r"started, pid (\d+)", log.read_text()) if log.exists() else None
        assert found, f"rank {rank} did not start\n{said}"
        gone = time.monotonic() + 20
        while time.monotonic() < gone and running(int(found.group(1))):
            time.sleep(0.05)
        assert not running(int(found.group(1))), f"rank {rank} is still running\n{said}"
        texts[rank] = log.read_text()
    assert f"--input={tmp_path / 'nope.mkv'}: cannot open: No such file or directory" in texts[0], texts[0]
    recorded = [r for r, t in texts.items() if ": error: " in t and "exiting with status 1" in t]
    torn_down = [r for r in texts if r not in recorded]
    if torn_down:
        assert HYDRA_TEARDOWN in run.stdout + run.stderr, f"ranks {torn_down} ended without a record\n{said}"
        assert recorded, f"no rank recorded the failure before mpiexec's teardown\n{said}"
    assert not out.exists()


def test_a_file_that_is_not_a_video_is_refused(tmp_path):
    junk = tmp_path / "junk.mkv"
    junk.write_bytes(bytes(range(256)) * 64)
    run = run_bad(["--impl", "serial", "-i", str(junk), "-o", str(tmp_path / "o.raw")])
    assert run.returncode == 1
    assert f"--input={junk}: cannot" in run.stderr, run.stderr
    assert not (tmp_path / "o.raw").exists()


@pytest.mark.parametrize("name", ["mpi-async", "zmq", "dsm"])
def test_an_existing_output_is_kept_and_the_job_fails_on_every_rank(tmp_path, video, name):
    out = tmp_path / "out.nut"
    out.write_bytes(b"precious")
    run = subprocess.run(launch_args(name, program(), video, out), capture_output=True, text=True, timeout=60)
    assert run.returncode != 0
    assert f"--output={out}: exists (pass --overwrite to replace it)" in run.stderr, run.stderr
    assert out.read_bytes() == b"precious"


def test_a_codec_that_a_bare_file_cannot_hold_is_refused(tmp_path, video):
    run = run_bad(["--impl", "serial", "-i", str(video), "-o", str(tmp_path / "o.raw"), "--codec", "ffv1"])
    assert run.returncode == 1
    assert "--codec=ffv1: a bare-bytes file" in run.stderr, run.stderr
    assert not (tmp_path / "o.raw").exists()


@pytest.mark.parametrize(
    "impl,ranks,extra,message",
    [
        ("mpi-sync", 2, [], "--impl=mpi-sync: 2 ranks: the pipeline needs at least 3"),
        ("dsm", 4, ["--dsm-servers", "2"], "--dsm-servers=2: with 4 ranks this leaves 2 clients"),
    ],
)
def test_too_few_ranks_are_refused(tmp_path, video, impl, ranks, extra, message):
    run = run_bad(["--impl", impl, "-i", str(video), "-o", str(tmp_path / "o.nut"), *extra], ranks=ranks)
    assert run.returncode != 0
    assert message in run.stderr, run.stderr
    assert not (tmp_path / "o.nut").exists()
