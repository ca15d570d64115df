# SPDX-License-Identifier: MIT
"""dask.distributed across 2 emulated nodes (apps/video/emulate) with strata.dask loaded: an array that lives
in a strata segment goes by handle to a worker on its node (that worker maps the segment and its write is
seen through it) and as data to a worker on the other node (the bytes cross that node's link, the worker
never maps the segment and its write stays in its copy); the sums match numpy's; nothing is left behind.
Needs root (network namespaces); the driver is dask_nodes_driver.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest
from capability import require
from emulation_support import EMULATE, emulation_leftovers

pytestmark = pytest.mark.timeout(400)
DRIVER = Path(__file__).with_name("dask_nodes_driver.py")
N = 2 << 20  # float64: 16 MiB, far above what dask's own messages put on a link while one task runs


@pytest.fixture
def shm_dir():
    path = Path("/dev/shm") / f"strata-dask-nodes-test-{uuid.uuid4().hex[:12]}"
    path.mkdir(mode=0o700)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def leftovers(shm_dir: Path, emulate_pid: int, pids: list[int]) -> list[str]:
    """What this run could have left: segment files, its namespaces, links and cgroup, its processes."""
    found = [f"segment file {p.name}" for p in shm_dir.iterdir()]
    found += emulation_leftovers(emulate_pid)
    for pid in pids:
        try:
            os.kill(pid, 0)
            found.append(f"worker process {pid}")
        except ProcessLookupError:
            pass
    return found


def test_a_segment_array_goes_by_handle_on_its_node_and_as_data_to_the_other(
    strata_module, tmp_path, shm_dir
):
    if not os.environ.get("CI"):
        pytest.importorskip("distributed")
    require(os.geteuid() == 0, "root (network namespaces, tc, cgroups)")
    require(Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us").exists(), "cgroup v1 cpu controller")
    segment = f"dask-nodes-{uuid.uuid4().hex[:8]}"
    run = subprocess.Popen(
        [str(EMULATE), "--nodes", "n0=none,n1=none", "--rate", "none", "--",
         "env", f"STRATA_SHM_DIR={shm_dir}", sys.executable, str(DRIVER), str(tmp_path), segment, str(N)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    out, err = run.communicate(timeout=360)
    log = (tmp_path / "cluster.log").read_text() if (tmp_path / "cluster.log").exists() else ""
    assert run.returncode == 0, err[-4000:] + log[-4000:]
    got = json.loads(out)
    reference = np.sin(np.arange(N, dtype=np.float64))

    assert (got["client_shared"], got["client_equal"]) == (False, True)  # relayed by the scheduler: data
    same, other = got["w0b"], got["w1"]
    assert (same["node"], other["node"]) == ("n0", "n1")
    # On n0: the segment's own pages (mapped, a view of a segment vector), summed like numpy sums them.
    assert same["shared"] and same["mapped"], same
    assert same["sum"] == float(reference.sum())
    # On n1: a copy that came over n1's link; the segment was never mapped there.
    assert not other["shared"] and not other["mapped"], other
    reference[1] = -1.0  # w0b's write was in the segment when w1 received the array
    assert other["sum"] == float(reference.sum())
    assert other["link_received"]["n1"] >= N * 8, other
    assert same["link_received"]["n0"] < N * 8 // 4, same  # the handle did not put the array on a link
    # w0b wrote a[1] into the segment; w1's a[2] went to its copy only.
    assert got["segment_head"] == [0.0, -1.0, float(np.sin(2.0))]
    assert got["w0a_sent"]["handle"] >= 1 and got["w0a_sent"]["data"] >= 1, got["w0a_sent"]

    assert leftovers(shm_dir, run.pid, [same["pid"], other["pid"]]) == []
