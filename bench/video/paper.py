# SPDX-License-Identifier: MIT
"""Paper 003 at its own scale (bench/video/run --paper): its 8 boards, its 3 frame sizes, its figures.

The suite (driver.py, report.py) runs 4 uneven nodes and a few hundred frames; --paper, the long run
outside CI (issue 30), emulates the paper's platform: one Core i7, a Jetson TX2, an Odroid XU3 and an
XU4, two Kirin boards and two Raspberry Pi 3B+, each on its own node at its relative speed, on
Gigabit links, through the same driver.py. This file holds what the run takes from the paper and
what it had to choose; the run script reads the nodes, the frame counts and the estimate from it
(`paper.py nodes`, `paper.py frames`, `paper.py estimate`, `paper.py config ...`) and paper_report.py
the paper's figures.

The paper's figures, as the text of paper 003 (Cudennec and Trabelsi, Euro-Par 2020 workshops, the
seed's plain text) gives them. The text has Table 2's method and its results, not the table's
per-board rows:
* Table 2, step 1: speeds are normalised to the Raspberry Pi 3B+ (P = 1); "the Core i7 for UHD-2
  computes more than 13 times faster than the RPI".
* Table 2, step 2: α·(P_i7 + P_TX2 + P_XU3 + P_XU4 + 2·P_Kirin + 2·P_RPI) = NB_FRAMES with 1296,
  1298 and 1306 frames (HD, UHD-1, UHD-2) and α = 60.9, 50.6 and 53.0: ΣP = 21.28, 25.65, 24.64.
* Table 2, last step: ideal time max(α·P_n · TIME_PER_FRAME_n) = 20.8 s, 61.3 s and 247.0 s.
* Fig. 2, in §4's text: ZeroMQ takes 731 s at UHD-1 and 568 s at UHD-2; the S-DSM up to 2x faster
  than MPI, the best MPI more than 2x slower than the best S-DSM at HD and UHD-1.
* §4: about 39000 messages (S-DSM, at the MPI level), 6500 (MPI), 3900 (ZeroMQ) per run; the event
  log records about 240000 events per run.
* Fig. 3 (cumulative processing and waiting times) has no figure in the text, only its reading.

The relative speeds emulated (BOARDS): the i7 at 13 (the text's "more than 13 times", at UHD-2),
the two Raspberry Pi at 1, and the rest of UHD-2's ΣP (24.64 − 13 − 2 = 9.64) shared equally by the
TX2, the XU3, the XU4 and the two Kirin boards (1.93 each), since the text does not split it. One
set of speeds serves every size (the emulation's quotas are fixed for the run); the driver measures
each node's kernel time per frame under its quota at every size, and the ideal is computed from those
measurements by the paper's method (report.ideal_of).

The scale (QUOTA_PER_UNIT): a node's cgroup quota is its P times 100/13 % of one core, so the i7 has
one whole core (as the suite's gateway does) and the 8 nodes 189.5 % of this machine's 2 cores; the
ratios between nodes are the paper's to the rounding of the quotas' microseconds (< 0.05 %). Links
are 1 Gbit/s, the paper's Gigabit Ethernet (also the suite's default --rate).
"""

from __future__ import annotations

import json
import os
import sys
import time

# The paper's figures (see the docstring for where each comes from).
PAPER = {
    "frames": {"hd": 1296, "uhd1": 1298, "uhd2": 1306},  # §Ideal time: the 3DMark samples' frames
    "alpha": {"hd": 60.9, "uhd1": 50.6, "uhd2": 53.0},  # Table 2, step 2: the workload coefficient
    "ideal_s": {"hd": 20.8, "uhd1": 61.3, "uhd2": 247.0},  # Table 2, last step: the ideal time
    "frame_mb": {"hd": 2, "uhd1": 8, "uhd2": 33},  # §Ideal time: the frames' sizes
    "zmq_s": {"uhd1": 731.0, "uhd2": 568.0},  # Fig. 2, quoted in §4: ZeroMQ's job times
    "messages": {"dsm": 39000, "mpi": 6500, "zmq": 3900},  # §4: messages per run, about
    "events": 240000,  # §4: event-log events per run, about
    "i7_over_rpi_uhd2": 13,  # Table 2, step 1: "more than 13 times faster" at UHD-2
}
SUM_P_UHD2 = PAPER["frames"]["uhd2"] / PAPER["alpha"]["uhd2"]
# The five boards the text gives no speed for share what is left of UHD-2's ΣP.
MIDDLE_P = (SUM_P_UHD2 - PAPER["i7_over_rpi_uhd2"] - 2 * 1.0) / 5

# (emulated node, board, relative speed P). Order matters: the first node is the gateway (input,
# output, the DSM's first server), the first four carry the 4-server DSM, as in the paper (§4: the
# i7, then the TX2, the XU3 and the XU4).
BOARDS = (
    ("i7", "Intel Core i7", float(PAPER["i7_over_rpi_uhd2"])),
    ("tx2", "Nvidia Jetson TX2", MIDDLE_P),
    ("xu3", "Odroid XU3", MIDDLE_P),
    ("xu4", "Odroid XU4", MIDDLE_P),
    ("kirin1", "Kirin", MIDDLE_P),
    ("kirin2", "Kirin", MIDDLE_P),
    ("rpi1", "Raspberry Pi 3B+", 1.0),
    ("rpi2", "Raspberry Pi 3B+", 1.0),
)
# Percent of one core per unit of P: the i7 gets one whole core.
QUOTA_PER_UNIT = 100.0 / PAPER["i7_over_rpi_uhd2"]
RATE = "1gbit"

# The paper's implementations among the suite's (driver.IMPLS), by the family its figures compare:
# its S-DSM's four configurations are 1 or 4 servers (as super-peers), with the event log on or off.
FAMILIES = {
    "MPI": ("mpi-sync", "mpi-async", "mpi-async-multi"),
    "S-DSM": ("dsm", "dsm-log", "dsm-4peers", "dsm-4peers-log"),
    "ZeroMQ": ("zmq",),
}

# Frames per size: the paper's where they fit, fewer where not (FRAMES_WHY is results.md's reason; the
# calibration behind it is in docs/benchmarks/video/paper/README.md).
FRAMES = {"hd": 1296, "uhd1": 600, "uhd2": 160}
FRAMES_WHY = (
    "HD runs the paper's 1296 frames. UHD-2 runs 160: the most whose input and one run's output (10.6 GB, "
    "in /dev/shm) fit in half of this machine's 23 GiB of memory; the paper's 1306 would need 87 GB. UHD-1 "
    "runs 600, what the hour leaves: a calibration run on the same 8 nodes (150, 40 and 16 frames) took, "
    "over one run of each of the 12 implementations, 0.21 s per HD frame, 1.05 s per UHD-1 frame and "
    "7.39 s per UHD-2 frame, so the paper's counts would take about 4 hours; these, about 49 minutes."
)
# The calibration's estimate of the whole run with FRAMES, in minutes (README.md says how).
ESTIMATED_MIN = 49


def quota(p: float) -> str:
    """A node's quota for emulate --nodes: percent of one core, to a thousandth."""
    return f"{p * QUOTA_PER_UNIT:.3f}".rstrip("0").rstrip(".")


def nodes_spec() -> str:
    return ",".join(f"{node}={quota(p)}" for node, _, p in BOARDS)


def frames_spec() -> str:
    return ",".join(f"{size}={n}" for size, n in FRAMES.items())


def config(nodes: str, rate: str, command: str, quick: bool) -> dict:
    """results.json's "config" for a --paper run (driver.py adds the nodes, implementations, repeats)."""
    return {
        "nodes_spec": nodes,
        "rate": rate,
        "command": command,
        "quick": quick,
        "paper": True,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "cpus": os.cpu_count(),
        "estimated_min": ESTIMATED_MIN,
    }


def record() -> dict:
    """What results.json keeps of this file: paper_report.py writes it once, then reads it back, so that a
    report regenerated later shows the figures and boards of its own run."""
    return {
        "figures": PAPER,
        "boards": [{"node": n, "board": b, "p": p, "quota": float(quota(p))} for n, b, p in BOARDS],
        "sum_p_uhd2": SUM_P_UHD2,
        "middle_p": MIDDLE_P,
        "quota_per_unit": QUOTA_PER_UNIT,
        "families": {k: list(v) for k, v in FAMILIES.items()},
        "frames": FRAMES,
        "frames_why": FRAMES_WHY,
        "rate": RATE,
    }


def main(argv: list[str]) -> int:
    if argv[:1] == ["nodes"]:
        print(nodes_spec())
    elif argv[:1] == ["frames"]:
        print(frames_spec())
    elif argv[:1] == ["estimate"]:
        print(ESTIMATED_MIN)
    elif argv[:1] == ["config"] and len(argv) == 5:
        print(json.dumps(config(argv[1], argv[2], argv[3], argv[4] == "1")))
    else:
        print("usage: paper.py nodes | frames | estimate | config NODES RATE COMMAND QUICK", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
