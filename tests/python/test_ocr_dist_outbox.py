# SPDX-License-Identifier: MIT
"""Distributed OCR's outboxes (docs/runtime.md, "Outboxes"): what one EDT sends to another
rank leaves in one message when the EDT ends, and what waits while the EDT computes on leaves
within the outbox's hold, not at the EDT's end. Two ranks on this machine (`strata ocr -n 2`)
run tests/ocr/dist/an_edt_s_messages_to_another_rank_leave_together.c.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from capability import require
from conftest import REPO

pytestmark = pytest.mark.timeout(120)
STRATA_BIN = Path(os.environ.get("STRATA_BIN", REPO / "build" / "default" / "bin" / "strata"))
PROGRAM = STRATA_BIN.parent / "ocr_dist_an_edt_s_messages_to_another_rank_leave_together"
# The program's own figures: 32 EDTs created on the last rank, each also wired and satisfied, by
# one EDT; and how long that EDT computes after creating one.
MESSAGES_OF_ONE_EDT = 3 * 32
LINGER_MS = 400


def run(mode: str, **env: str) -> subprocess.CompletedProcess[str]:
    require(PROGRAM.exists(), f"{PROGRAM} (build the default preset)")
    done = subprocess.run(
        [str(STRATA_BIN), "ocr", "-n", "2", str(PROGRAM), mode],
        capture_output=True,
        text=True,
        timeout=100,
        env={**os.environ, **env},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def test_the_messages_one_edt_sends_to_another_rank_leave_in_a_few_posts():
    done = run("bundle", STRATA_STATS="1")
    found = re.search(r"strata-ocr: rank 0: (\d+) messages to other ranks in (\d+) posts", done.stderr)
    assert found, done.stderr
    messages, posts = int(found.group(1)), int(found.group(2))
    assert messages >= MESSAGES_OF_ONE_EDT, done.stderr
    # One post each would leave messages == posts; the EDT's own go in a handful at most.
    assert messages - posts >= MESSAGES_OF_ONE_EDT - 4, done.stderr
    assert "32 EDTs created and satisfied by one EDT ran on rank 1" in done.stdout


def test_what_an_edt_sent_leaves_while_it_computes_on():
    done = run("linger")
    found = re.search(r"started_after_ms ([0-9.]+)", done.stdout)
    assert found, done.stdout + done.stderr
    # Held to the EDT's end it would start after LINGER_MS.
    assert float(found.group(1)) < LINGER_MS / 2, done.stdout
