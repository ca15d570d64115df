# SPDX-License-Identifier: MIT
"""The UMT programs on two emulated nodes (bench/umt/umt_net.hpp, paper 002 §IV's two-node runs).

strata-umt-fwi and strata-umt-heat run one rank per node (apps/video/emulate: a
network namespace and cgroups per node, a shaped veth link), each rank bound to
a CPU of its own, halos exchanged by blocking MPI calls inside tasks. Their
final fields, on one node and on two, equal a NumPy reference written here from
the programs' descriptions; with the blocking monitor on, a task blocked in an
exchange is covered on each node (the runtime's counters), and with it off it
is not. Nothing of the emulation is left behind. Needs root.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from capability import require
from conftest import REPO
from emulation_support import emulation_leftovers, run_emulated

pytestmark = pytest.mark.timeout(300)
STRATA_BIN = Path(os.environ.get("STRATA_BIN", REPO / "build" / "default" / "bin" / "strata"))
BIN = STRATA_BIN.parent
FWI = dict(slices=6, slice_kib=4, steps=3, sweeps=3)
HEAT = dict(blocks=4, block_size=32, iters=3, sweeps=2)


def fwi_reference(slices, slice_kib, steps, sweeps):
    """The FWI mock-up's volume after `steps` forward and `steps` backward steps (fwi.cpp's propagate)."""
    n = slice_kib * 1024 // 8
    start = np.array([[np.sin(float(s * 7 + i)) for i in range(n)] for s in range(slices)])
    volume = [start.copy(), start.copy()]
    for k in range(2 * steps):
        before, out = volume[(k & 1) ^ 1], volume[k & 1]
        for s in range(slices):
            left, mid, right = before[max(s - 1, 0)], before[s], before[min(s + 1, slices - 1)]
            up = np.concatenate(([mid[0]], mid[:-1]))
            down = np.concatenate((mid[1:], [mid[-1]]))
            row = 0.2 * ((((left + right) + up) + down) + mid) + 1e-3
            for _ in range(1, sweeps):
                for i in range(1, n - 1):
                    row[i] = 0.25 * (row[i - 1] + 2.0 * row[i] + row[i + 1])
            out[s] = row
    return volume[(2 * steps - 1) & 1]


def heat_reference(blocks, block_size, iters, sweeps):
    """Blocked Gauss-Seidel in the order the tasks' dependences impose (heat.cpp's relax)."""
    n = blocks * block_size
    grid = [[100.0 if r == 0 or c == 0 else 0.0 for c in range(n)] for r in range(n)]
    for _ in range(iters):
        for bi in range(blocks):
            for bj in range(blocks):
                rows = range(max(1, bi * block_size), min(n - 1, (bi + 1) * block_size))
                cols = range(max(1, bj * block_size), min(n - 1, (bj + 1) * block_size))
                for _ in range(sweeps):
                    for r in rows:
                        row, up, down = grid[r], grid[r - 1], grid[r + 1]
                        for c in cols:
                            row[c] = 0.25 * (up[c] + down[c] + row[c - 1] + row[c + 1])
    return np.array(grid)


def fwi_args(tmp_path, name, **extra):
    args = dict(
        FWI, io_freq=1, direct=0, file=tmp_path / f"{name}.dat", dump=tmp_path / f"{name}.out", **extra
    )
    return [f"--{key.replace('_', '-')}={value}" for key, value in args.items()]


def heat_args(tmp_path, name, **extra):
    args = dict(
        HEAT, ckpt_every=2, direct=0, file=tmp_path / f"{name}.dat", dump=tmp_path / f"{name}.out", **extra
    )
    return [f"--{key.replace('_', '-')}={value}" for key, value in args.items()]


@pytest.fixture(scope="module")
def emulation_ready():
    require(os.geteuid() == 0, "root (network namespaces, tc, cgroups, BPF)")
    require(Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us").exists(), "cgroup v1 cpu controller")
    require(Path("/sys/fs/cgroup/cpuacct/cpuacct.usage").exists(), "cgroup v1 cpuacct controller")
    for program in ("strata-umt-fwi", "strata-umt-heat"):
        require((BIN / program).exists(), f"{BIN / program} (build the default preset)")


def two_nodes(program: str, args: list[str], monitor: str, rate: str = "none") -> list[dict]:
    """The ranks' result objects of one job with a rank per emulated node; checks the emulation left nothing."""
    spec = {"program": str(BIN / program), "args": args, "env": {"STRATA_MONITOR": monitor},
            "cpus": [0, 1 % os.cpu_count()], "interval_s": 0.2, "timeout_s": 120}  # fmt: skip
    run = run_emulated(
        ["--nodes", "n0=none,n1=none", "--rate", rate, "--burst", "16kb", "--",
         "python3", str(REPO / "bench" / "umt" / "nodes_job.py"), json.dumps(spec)],
        timeout=200,
    )  # fmt: skip
    assert emulation_leftovers(run.pid) == [], run.stderr
    line = next((x for x in run.stdout.splitlines() if x.startswith("UMT_NODES ")), None)
    assert line is not None, run.stdout + run.stderr
    job = json.loads(line.split(" ", 1)[1])
    assert job["returncode"] == 0, job["output"]
    assert [r["rank"] for r in job["results"]] == [0, 1], job
    return job["results"]


def one_node(program: str, args: list[str]) -> None:
    run = subprocess.run([str(BIN / program), *args], env=dict(os.environ, STRATA_MONITOR="off"),
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr


def dumped(path: Path, shape) -> np.ndarray:
    return np.fromfile(path, dtype=np.float64).reshape(shape)


def test_fwi_on_two_emulated_nodes_computes_the_reference_volume_as_one_node_does(tmp_path, emulation_ready):
    reference = fwi_reference(**FWI)
    one_node("strata-umt-fwi", fwi_args(tmp_path, "one"))
    ranks = two_nodes("strata-umt-fwi", fwi_args(tmp_path, "two"), "ebpf")
    assert all(r["messages"] > 0 and r["snapshot_mismatches"] == 0 for r in ranks), ranks
    for name in ("one", "two"):
        assert np.allclose(
            dumped(tmp_path / f"{name}.out", reference.shape), reference, rtol=1e-12, atol=0
        ), name


def test_heat_on_two_emulated_nodes_computes_the_reference_grid_as_one_node_does(tmp_path, emulation_ready):
    reference = heat_reference(**HEAT)
    one_node("strata-umt-heat", heat_args(tmp_path, "one"))
    ranks = two_nodes("strata-umt-heat", heat_args(tmp_path, "two"), "ebpf")
    assert all(r["messages"] > 0 for r in ranks), ranks
    for name in ("one", "two"):
        assert np.allclose(
            dumped(tmp_path / f"{name}.out", reference.shape), reference, rtol=1e-12, atol=0
        ), name


def test_a_task_blocked_in_an_mpi_exchange_is_covered_on_each_emulated_node_with_the_monitor_on(
    tmp_path, emulation_ready
):
    # A slow link: each exchange of a 64 KiB slice waits for the network, and
    # starts first once ready (a priority hint), while the rank's other slices
    # (4 per rank) are ready to run.
    shape = [
        "--slices=8",
        "--slice-kib=64",
        "--steps=4",
        "--sweeps=100",
        "--io-freq=0",
        f"--file={tmp_path}/f.dat",
    ]
    covered = {}
    for monitor in ("off", "ebpf"):
        ranks = two_nodes(
            "strata-umt-fwi", [*shape, f"--dump={tmp_path}/{monitor}.out"], monitor, rate="20mbit"
        )
        assert [r["monitor"] for r in ranks] == [monitor, monitor], ranks
        assert all(r["net_wait_s"] > 0 and r["messages"] > 0 for r in ranks), ranks
        covered[monitor] = [r["covers"] + r["standby_takeovers"] for r in ranks]
    assert covered["off"] == [0, 0], covered
    assert all(count > 0 for count in covered["ebpf"]), covered
    # The covers changed who ran the tasks, not what they computed.
    assert (tmp_path / "ebpf.out").read_bytes() == (tmp_path / "off.out").read_bytes()
