# SPDX-License-Identifier: MIT
"""A two-task workflow file whose producer waits period_us between handoffs, for the tests of
`strata run` that need a run of a known least length (docs/workflow.md)."""

from __future__ import annotations

from pathlib import Path


def paced_workflow(path: Path, iterations: int, period_us: int, method: str = "threads") -> Path:
    """Producer -> consumer over `method`, 4 KiB per handoff: the run lasts iterations x period_us
    at least."""
    path.write_text(
        f"""[workflow]
iterations = {iterations}
warmup = 0
[[task]]
name = "producer"
period_us = {period_us}
data_size = 4096
[[task]]
name = "consumer"
[[edge]]
from = "producer"
to = "consumer"
method = "{method}"
"""
    )
    return path
