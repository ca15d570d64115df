# SPDX-License-Identifier: MIT
"""scripts/dsm-event-latency on event logs written here, whose messages' latencies the test knows:
each rank's times are relative to its own join, and the header's join time puts them on one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "dsm-event-latency"


def write_log(path: Path, rank: int, joined_ns: int, events: list[tuple[float, str]]) -> None:
    """events: (absolute µs on the shared clock, "dir kind peer client chunk version size")."""
    lines = [
        f"# strata dsm event log: rank {rank} of 2 (client), node n0, {len(events)} events, 0 dropped, "
        f"joined at {joined_ns} ns monotonic",
        "# t_us dir kind peer client chunk version size",
    ]
    lines += [f"{t - joined_ns / 1e3:.3f} {rest}" for t, rest in events]
    path.write_text("\n".join(lines) + "\n")


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)


def test_latencies_put_every_rank_on_the_shared_clock_and_count_what_nobody_received(tmp_path):
    # Rank 0 joined at 1000 µs, rank 1 at 400 µs: rank 1's times are 600 µs larger for one instant.
    write_log(
        tmp_path / "events-0.txt",
        0,
        1_000_000,
        [
            (1100.0, "sent notify 1 -1 0x5 1 64"),
            (1200.0, "sent notify 1 -1 0x5 1 64"),  # the same chunk and version again: matched in order
            (1300.0, "sent publish 1 -1 0x6 2 0"),  # never received
            (1700.0, "recv notify 1 -1 0x7 3 64"),
        ],
    )
    write_log(
        tmp_path / "events-1.txt",
        1,
        400_000,
        [
            (1350.0, "recv notify 0 -1 0x5 1 64"),
            (1500.0, "recv notify 0 -1 0x5 1 64"),
            (1640.0, "sent notify 0 -1 0x7 3 64"),
        ],
    )
    got = run("--json", "--by", "pair", str(tmp_path / "events-0.txt"), str(tmp_path / "events-1.txt"))
    assert got.returncode == 0, got.stderr
    rows = {(r["from"], r["to"], r["kind"]): r for r in json.loads(got.stdout)}
    assert set(rows) == {(0, 1, "notify"), (0, 1, "publish"), (1, 0, "notify")}
    first = rows[(0, 1, "notify")]
    assert first["messages"] == 2 and first["unreceived"] == 0
    assert abs(first["min_us"] - 250.0) < 1e-6 and abs(first["max_us"] - 300.0) < 1e-6
    assert abs(first["median_us"] - 275.0) < 1e-6
    assert rows[(0, 1, "publish")]["messages"] == 0 and rows[(0, 1, "publish")]["unreceived"] == 1
    assert abs(rows[(1, 0, "notify")]["median_us"] - 60.0) < 1e-6
    by_kind = {
        r["kind"]: r for r in json.loads(run("--json", *map(str, sorted(tmp_path.glob("*.txt")))).stdout)
    }
    assert by_kind["notify"]["messages"] == 3 and abs(by_kind["notify"]["min_us"] - 60.0) < 1e-6


def test_a_log_without_its_join_time_is_refused_naming_the_file(tmp_path):
    old = tmp_path / "events-0.txt"
    old.write_text("# strata dsm event log: rank 0 of 1 (server), node n0, 0 events, 0 dropped\n# t_us dir\n")
    got = run(str(old))
    assert got.returncode == 2
    assert str(old) in got.stderr and "join time" in got.stderr
    assert got.stdout == ""
