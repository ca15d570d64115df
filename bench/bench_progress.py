# SPDX-License-Identifier: MIT
"""Tells `strata bench` which step of a suite is running (docs/cli.md#progress).

On a terminal, `strata bench` names a pipe in STRATA_PROGRESS_FD and shows the
latest step on its progress line; elsewhere the variable is unset and step()
does nothing, so a suite's output is the same with or without it. The shell
twin is strata_bench_progress in bench/lib.sh. A driver imports it with

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from bench_progress import step
"""

from __future__ import annotations

import os


def step(number: int, total: int, text: str) -> None:
    """Step `number` (from 1) of `total` (0: not counted) is starting: `text`."""
    fd = os.environ.get("STRATA_PROGRESS_FD")
    if not fd:
        return
    try:
        os.write(int(fd), f"{number} {total} {' '.join(text.split())}\n".encode())
    except (OSError, ValueError):
        pass  # strata went away, or the variable is not ours: the line is a courtesy
