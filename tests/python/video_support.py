# SPDX-License-Identifier: MIT
"""Helpers of the strata-video tests: the binary, small test videos, the reference filter, launches.

The reference is independent of the program: frames decoded by the ffmpeg command-line tool and
filtered by scipy.ndimage.convolve (mode "nearest"), clipped to 0..255.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from pathlib import Path

import numpy as np
from capability import require
from conftest import REPO

# MPICH 4.0.2's mpiexec giving up when its SIGUSR1 notice meets a proxy that just ended; its other
# proxies then SIGKILL their ranks (test_video_failures.py's docstring).
HYDRA_TEARDOWN = "unable to send SIGUSR1 downstream"


def running(pid: int) -> bool:
    """True while process `pid` exists and is not a zombie."""
    status = Path(f"/proc/{pid}/status")
    try:
        return "zombie" not in status.read_text()
    except FileNotFoundError:
        return False


KERNEL = np.array([[-1, -1, -1], [-1, 8, -1], [-1, -1, -1]], dtype=np.int32)
WIDTH, HEIGHT, FRAMES = 160, 120, 24


def bin_dir() -> Path:
    if "STRATA_BIN" in os.environ:
        return Path(os.environ["STRATA_BIN"]).resolve().parent
    return REPO / "build" / "default" / "bin"


def program() -> Path:
    path = bin_dir() / "strata-video"
    require(path.exists(), f"{path} is not built (cmake --build --preset default --target strata_video)")
    require(shutil.which("ffmpeg") is not None, "the ffmpeg command (scripts/bootstrap installs it)")
    require(shutil.which("mpiexec") is not None, "mpiexec (MPICH; scripts/bootstrap installs it)")
    return path


def make_video(path: Path, frames: int = FRAMES, size: tuple[int, int] = (WIDTH, HEIGHT)) -> Path:
    """A grey FFV1 test video from ffmpeg's testsrc (no network)."""
    subprocess.run(
        ["ffmpeg", "-v", "error", "-nostdin", "-f", "lavfi", "-i", f"testsrc=size={size[0]}x{size[1]}:rate=25",
         "-frames:v", str(frames), "-pix_fmt", "gray", "-c:v", "ffv1", str(path)],
        check=True, timeout=60,
    )  # fmt: skip
    return path


def decode(path: Path, width: int = WIDTH, height: int = HEIGHT) -> np.ndarray:
    """Frames of a video (or of a bare .raw file) as uint8 arrays [frames, height, width]."""
    if path.suffix in (".raw", ".gray"):
        data = path.read_bytes()
    else:
        data = subprocess.run(
            ["ffmpeg", "-v", "error", "-nostdin", "-i", str(path), "-f", "rawvideo", "-pix_fmt", "gray", "-"],
            check=True, capture_output=True, timeout=60,
        ).stdout  # fmt: skip
    return np.frombuffer(data, dtype=np.uint8).reshape(-1, height, width)


def reference(frames: np.ndarray) -> np.ndarray:
    from scipy import ndimage

    out = [np.clip(ndimage.convolve(f.astype(np.int32), KERNEL, mode="nearest"), 0, 255) for f in frames]
    return np.stack(out).astype(np.uint8)


def free_port_base() -> int:
    """Three consecutive free TCP ports on 127.0.0.1 (the zmq implementations bind P, P+1, P+2)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + 2 >= 65536:
            continue
        try:
            probes = []
            for p in (base, base + 1, base + 2):
                t = socket.socket()
                probes.append(t)
                t.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
        finally:
            for t in probes:
                t.close()
    raise RuntimeError("no three consecutive free ports")


# Implementations as the tests launch them: (strata-video --impl, ranks, extra arguments).
IMPLS = {
    "mpi-sync": ("mpi-sync", 4, []),
    "mpi-async": ("mpi-async", 4, []),
    "mpi-async-multi": ("mpi-async-multi", 4, ["--credits", "3"]),
    "zmq": ("zmq", 4, []),
    "zmq-credit": ("zmq-credit", 4, ["--credits", "3"]),
    "dsm": ("dsm", 5, []),
    "dsm-2servers": ("dsm", 6, ["--dsm-servers", "2"]),
    "dsm-acquire": ("dsm-acquire", 5, []),
}


def launch_args(
    name: str, binary: Path, video: Path, output: Path, extra: list[str] | None = None
) -> list[str]:
    impl, ranks, args = IMPLS[name]
    cmd = ["mpiexec", "-n", str(ranks), str(binary), "--impl", impl, "-i", str(video), "-o", str(output)]
    cmd += ["--timeout-ms", "5000", *args, *(extra or [])]
    if impl.startswith("zmq"):
        cmd += ["--zmq-port", str(free_port_base())]
    return cmd
