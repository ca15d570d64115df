# SPDX-License-Identifier: MIT
"""The flagship's serial reference (flagship.py --check): the same heat diffusion and the same
steering rule, computed with numpy in one process from the definitions of heat_kernel.h and
steer.cpp, not from anything the distributed run wrote."""

from __future__ import annotations

import numpy as np


def initial(n: int) -> np.ndarray:
    """100 inside the disk of radius n/4 around the grid's centre, 0 elsewhere."""
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    return np.where((i - n // 2) ** 2 + (j - n // 2) ** 2 < (n // 4) ** 2, 100.0, 0.0)


def step(u: np.ndarray, alpha: float) -> np.ndarray:
    """u + alpha (N + S + W + E - 4u), the field held at 0 outside the grid."""
    p = np.pad(u, 1)
    return u + alpha * (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4.0 * u)


def run(n: int, steps: int, m: int, steer_below: float) -> tuple[np.ndarray, dict[int, float]]:
    """The field after `steps` and the alpha decided after each frame (every m steps): 0.25
    while the peak is below steer_below, else 0.2 (steer_below 0: no steering, always 0.2)."""
    u, decided, alpha = initial(n), {}, 0.2
    for s in range(1, steps + 1):
        if steer_below and (s - 1) % m == 0:
            alpha = decided[s - 1] = 0.25 if u.max() < steer_below else 0.2
        u = step(u, alpha)
    return u, decided
