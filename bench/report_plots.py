# SPDX-License-Identifier: MIT
"""The plots of the benchmark reports, saved as small PNGs that are the same bytes every time a report.py
draws them from the same results (a 256-colour palette, no metadata): the reports keep only their
latest run in the tree, and docs/benchmarks stays small."""

from __future__ import annotations

import io
from pathlib import Path

from PIL import Image


def save_png(fig, path: Path | str, dpi: int) -> None:
    """fig (a matplotlib figure) drawn at dpi, written to path as a palette PNG."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    buffer.seek(0)
    with Image.open(buffer) as image:
        image.convert("RGB").quantize(256).save(path, format="png", optimize=True)
