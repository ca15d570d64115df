# SPDX-License-Identifier: MIT
"""Runs an OCR example application and checks its result against an
independent reference: numpy for Cholesky, FFT and the 2-D stencil, a plain
Python dynamic program for Smith-Waterman.

    check.py cholesky --n 96 --tile 24 -- <command...>
    check.py fft --n 1024 -- <command...>
    check.py smith-waterman --length 300 --tile 32 -- <command...>
    check.py stencil --n 96 --q 4 --steps 10 -- <command...>

<command> runs the program (directly, or `strata ocr [options] ./program`);
the application's own arguments are appended. Exit 0 when the program exits
0 and its result matches; otherwise 1 with the reason.
"""

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np


def run(command: list[str]) -> None:
    result = subprocess.run(command, check=False, timeout=120)
    if result.returncode != 0:
        sys.exit(f"check: {' '.join(command)}: exit status {result.returncode}")


def cholesky(args: argparse.Namespace, command: list[str], work: Path) -> None:
    rng = np.random.default_rng(14)
    m = rng.standard_normal((args.n, args.n))
    a = m @ m.T + args.n * np.eye(args.n)  # symmetric positive definite
    (work / "a.bin").write_bytes(a.astype("<f8").tobytes())
    run([*command, str(args.n), str(args.tile), str(work / "a.bin"), str(work / "l.bin")])
    got = np.frombuffer((work / "l.bin").read_bytes(), dtype="<f8").reshape(args.n, args.n)
    want = np.linalg.cholesky(a)
    error = np.max(np.abs(got - want)) / np.max(np.abs(want))
    print(f"cholesky n={args.n} tile={args.tile}: max relative difference to numpy {error:.3e}")
    if not np.allclose(got, want, rtol=1e-9, atol=1e-9 * np.max(np.abs(want))):
        sys.exit("check: L differs from numpy.linalg.cholesky")


def fft(args: argparse.Namespace, command: list[str], work: Path) -> None:
    rng = np.random.default_rng(41)
    x = rng.standard_normal(args.n) + 1j * rng.standard_normal(args.n)
    (work / "x.bin").write_bytes(x.astype("<c16").tobytes())
    run([*command, str(args.n), str(work / "x.bin"), str(work / "y.bin"), str(args.serial_below)])
    got = np.frombuffer((work / "y.bin").read_bytes(), dtype="<c16")
    want = np.fft.fft(x)
    error = np.max(np.abs(got - want)) / np.max(np.abs(want))
    print(f"fft n={args.n}: max relative difference to numpy {error:.3e}")
    if not np.allclose(got, want, rtol=1e-9, atol=1e-9 * np.max(np.abs(want))):
        sys.exit("check: the transform differs from numpy.fft.fft")


def smith_waterman_score(a: str, b: str) -> int:
    """Local alignment, match +2, mismatch -1, linear gap -1."""
    best = 0
    previous = [0] * (len(b) + 1)
    for ca in a:
        row = [0] * (len(b) + 1)
        for j, cb in enumerate(b, start=1):
            diagonal = previous[j - 1] + (2 if ca == cb else -1)
            row[j] = max(0, diagonal, previous[j] - 1, row[j - 1] - 1)
            best = max(best, row[j])
        previous = row
    return best


def smith_waterman(args: argparse.Namespace, command: list[str], work: Path) -> None:
    rng = np.random.default_rng(7)
    letters = np.array(list("ACGT"))
    a = "".join(rng.choice(letters, args.length))
    # b shares a mutated stretch of a, so the best local alignment is long.
    b = list(a[args.length // 4 : args.length // 4 + args.length // 2])
    for i in rng.choice(len(b), len(b) // 10, replace=False):
        b[i] = "ACGT"[(("ACGT".index(b[i])) + 1) % 4]
    b = "".join(rng.choice(letters, args.length // 5)) + "".join(b)
    score = smith_waterman_score(a, b)
    print(f"smith-waterman {len(a)} x {len(b)}: reference score {score}")
    run([*command, a, b, str(args.tile), str(score)])


def stencil_reference(grid: np.ndarray, steps: int) -> np.ndarray:
    """Jacobi steps: each point the mean of itself and its four neighbours, zero outside."""
    for _ in range(steps):
        padded = np.pad(grid, 1)
        up, down = padded[:-2, 1:-1], padded[2:, 1:-1]
        left, right = padded[1:-1, :-2], padded[1:-1, 2:]
        grid = 0.2 * (grid + up + down + left + right)
    return grid


def stencil(args: argparse.Namespace, command: list[str], work: Path) -> None:
    rng = np.random.default_rng(26)
    grid = rng.standard_normal((args.n, args.n))
    (work / "in.bin").write_bytes(grid.astype("<f8").tobytes())
    run([*command, str(args.n), str(args.q), str(args.steps), str(work / "in.bin"), str(work / "out.bin")])
    got = np.frombuffer((work / "out.bin").read_bytes(), dtype="<f8").reshape(args.n, args.n)
    want = stencil_reference(grid, args.steps)
    error = np.max(np.abs(got - want)) / np.max(np.abs(want))
    print(f"stencil n={args.n} q={args.q} steps={args.steps}: max relative difference to numpy {error:.3e}")
    if not np.allclose(got, want, rtol=1e-12, atol=1e-12 * np.max(np.abs(want))):
        sys.exit("check: the grid differs from the numpy stencil")


def main() -> None:
    if "--" not in sys.argv:
        sys.exit("usage: check.py <app> [options] -- <command...>")
    split = sys.argv.index("--")
    command = sys.argv[split + 1 :]
    parser = argparse.ArgumentParser(description=__doc__)
    sub = parser.add_subparsers(dest="app", required=True)
    p = sub.add_parser("cholesky")
    p.add_argument("--n", type=int, default=96)
    p.add_argument("--tile", type=int, default=24)
    p = sub.add_parser("fft")
    p.add_argument("--n", type=int, default=1024)
    p.add_argument("--serial-below", type=int, default=16)
    p = sub.add_parser("smith-waterman")
    p.add_argument("--length", type=int, default=300)
    p.add_argument("--tile", type=int, default=32)
    p = sub.add_parser("stencil")
    p.add_argument("--n", type=int, default=96)
    p.add_argument("--q", type=int, default=4)
    p.add_argument("--steps", type=int, default=10)
    args = parser.parse_args(sys.argv[1:split])
    with tempfile.TemporaryDirectory(prefix="strata-ocr-app-") as work:  # mkdtemp: 0700
        apps = {"cholesky": cholesky, "fft": fft, "smith-waterman": smith_waterman, "stencil": stencil}
        apps[args.app](args, command, Path(work))


if __name__ == "__main__":
    main()
