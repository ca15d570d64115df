# SPDX-License-Identifier: MIT
"""Reads the flagship's checkpoints: the MPI storage window files <out>/ckpt/rank-<r>.win that
heat_ckpt.c writes (its comment has the format: u64 words magic, version, n, q, tiles, slots; then
per tile its id and `slots` slots of [step (0: empty), (n/q)^2 doubles]).

    saved = checkpoints.read(out / "ckpt", n, q)   # {tile: {step: (n/q, n/q) array}}
    checkpoints.complete(saved, q, step)           # every tile has step
    checkpoints.reached(saved, q, step)            # a complete checkpoint of step or later
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

MAGIC = 0x31504B4354414548  # "HEATCKP1"
VERSION = 1
HEADER_WORDS = 6


def read(ckpt: Path, n: int, q: int) -> dict[int, dict[int, np.ndarray]]:
    """Every tile's saved steps in the window files of `ckpt` (files of another run shape are skipped)."""
    b = n // q
    saved: dict[int, dict[int, np.ndarray]] = {}
    for path in sorted(ckpt.glob("rank-*.win")):
        words = np.fromfile(path, dtype="<u8")
        if len(words) < HEADER_WORDS:
            continue
        magic, version, file_n, file_q, tiles, slots = (int(w) for w in words[:HEADER_WORDS])
        if (magic, version, file_n, file_q) != (MAGIC, VERSION, n, q):
            continue
        at = HEADER_WORDS
        for _ in range(tiles):
            tile = int(words[at])
            for s in range(slots):
                slot = at + 1 + s * (1 + b * b)
                step = int(words[slot])
                if step != 0:
                    saved.setdefault(tile, {})[step] = (
                        words[slot + 1 : slot + 1 + b * b].view("<f8").reshape(b, b)
                    )
            at += 1 + slots * (1 + b * b)
    return saved


def complete(saved: dict[int, dict[int, np.ndarray]], q: int, step: int) -> bool:
    """True when every one of the q*q tiles has a checkpoint of `step`."""
    return all(step in saved.get(t, {}) for t in range(q * q))


def reached(saved: dict[int, dict[int, np.ndarray]], q: int, step: int) -> bool:
    """True when a checkpoint of `step` or later is complete. The windows keep each tile's last saves
    only, so one who looks late (a loaded machine) finds a later checkpoint, never `step` again."""
    return any(complete(saved, q, s) for s in {s for tile in saved.values() for s in tile if s >= step})
