# SPDX-License-Identifier: MIT
"""The flagship's analysis (docs/getting-started/flagship.md): receives the heat field's frames
from the OCR program through a strata shm port, by handle (no copy), computes numpy statistics
of each and draws them with matplotlib.

    analysis.py --segment NAME --frames F --n N --out DIR [--consumers 2]

It creates the segment NAME (room for F frames of n×n doubles) and its port "frames"
(2 slots; 2 consumers when the steering job's bridge, steer.cpp, reads the frames too), says "analysis: ready" on stdout, then receives until the program's
frame EDT closes the port. Each frame is a float64 vector: the step, n, then the field, row
major. It writes DIR/stats.json (one record per frame) and DIR/heat.png, and exits 0; 1 with
the reason when the producer died (peer_dead) or a frame is malformed; 1 on SIGTERM, after
leaving the segment.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from pathlib import Path

import matplotlib
import numpy as np
import strata

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 (after the backend is chosen)


def statistics(field: np.ndarray, step: int) -> dict:
    n = field.shape[0]
    return {
        "step": step,
        "min": float(field.min()),
        "max": float(field.max()),
        "mean": float(field.mean()),
        "total": float(field.sum()),
        "centre": float(field[n // 2, n // 2]),
    }


def plot(stats: list[dict], last: np.ndarray, path: Path) -> None:
    figure, (left, right) = plt.subplots(1, 2, figsize=(9, 4))
    steps = [s["step"] for s in stats]
    left.plot(steps, [s["max"] for s in stats], label="max")
    left.plot(steps, [s["mean"] for s in stats], label="mean")
    left.set_xlabel("step")
    left.set_ylabel("temperature")
    left.legend()
    image = right.imshow(last, cmap="inferno", vmin=0.0, vmax=100.0)
    right.set_title(f"step {stats[-1]['step']}")
    figure.colorbar(image, ax=right)
    figure.tight_layout()
    figure.savefig(path, dpi=80)
    plt.close(figure)


def receive(port, stats: list[dict], busy: list[float]) -> np.ndarray | None:
    """Every frame until the end of the stream; returns a copy of the last field."""
    last = None
    while True:
        try:
            msg = port.recv(timeout=1.0)  # back in Python every second: SIGTERM is handled
        except strata.Error as error:
            if error.code == "timeout":
                continue
            raise
        if msg is None:
            return last
        with msg:
            started = time.perf_counter()
            frame = msg.array
            n = int(frame[1])
            if frame.size != n * n + 2:
                raise ValueError(f"frame of {frame.size} values: expected n*n+2 with n={n}")
            field = frame[2:].reshape(n, n)  # a view of the segment: no copy
            stats.append(statistics(field, int(frame[0])))
            last = field.copy()  # for the plot: the segment goes when both sides detach
            busy[0] += time.perf_counter() - started


def main() -> int:
    # SIGTERM (flagship.py stopping a failed run) leaves through the `with` blocks, which detach
    # from the segment: the last user to leave removes it.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--segment", required=True)
    parser.add_argument("--frames", type=int, required=True)
    parser.add_argument("--n", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--consumers", type=int, default=1, choices=(1, 2))
    args = parser.parse_args()
    size = args.frames * (args.n * args.n * 8 + 4096) + (4 << 20)
    stats: list[dict] = []
    busy = [0.0]  # seconds spent on the frames and the plot
    with strata.Segment(args.segment, "create_only", size=size) as seg:
        port = seg.port("frames", "consumer", slots=2, consumers=args.consumers)
        print("analysis: ready", flush=True)
        try:
            last = receive(port, stats, busy)
        except (strata.Error, ValueError) as error:
            print(f"analysis: {args.segment}: {error}", file=sys.stderr)
            return 1
        finally:
            port.close()
    (args.out / "stats.json").write_text(json.dumps(stats, indent=1) + "\n")
    if last is not None:
        started = time.perf_counter()
        plot(stats, last, args.out / "heat.png")
        busy[0] += time.perf_counter() - started
    print(
        f"analysis: {len(stats)} frames, steps {stats[0]['step'] if stats else '-'}..."
        f"{stats[-1]['step'] if stats else '-'}, plot {args.out / 'heat.png'}, seconds {busy[0]:.3f}",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
