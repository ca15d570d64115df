# SPDX-License-Identifier: MIT
"""`strata run` with a placement (docs/workflow.md, "Placement"): the same workflow gives the same data on
every edge with all tasks on one node and split over 2 emulated nodes (apps/video/emulate), every edge runs
as the placement implies (shm within a node, MPI across nodes, or the DSM across nodes with --across dsm, and
the bytes of the edges across nodes cross the emulated link), a task killed on the other node fails the run
instead of hanging, and a bad placement is an error naming the option, the value and the cause that leaves
nothing behind. The emulated tests need root."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import textwrap
import time
from pathlib import Path

import pytest
from capability import require
from conftest import REPO

pytestmark = pytest.mark.timeout(300)
EMULATE = REPO / "apps" / "video" / "emulate"
STRATA_BIN = Path(os.environ.get("STRATA_BIN", REPO / "build" / "default" / "bin" / "strata"))
MASK = (1 << 64) - 1
DATA = 65536  # bytes per producer and iteration
ITERATIONS = 12
WARMUP = 2  # a generated workflow's


def seed_of(task: int, it: int) -> int:
    """splitmix64 of (producer, iteration): what src/workflow/checksum.cpp fills, written again here."""
    z = ((task << 40) ^ it ^ 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def expected_digest(producer: int, words: int, iterations: int) -> int:
    """EdgeReport::digest of an edge from `producer`: the word sums of every iteration, folded FNV-1a style."""
    digest = 0xCBF29CE484222325
    for it in range(iterations):
        total = (words * seed_of(producer, it) + words * (words - 1) // 2) & MASK
        digest = ((digest ^ total) * 0x100000001B3) & MASK
    return digest


def block_nodes(tasks: int, nodes: list[str]) -> list[str]:
    """--nodes: tasks in file order, in blocks, the first nodes one more when they do not divide evenly."""
    per, extra = divmod(tasks, len(nodes))
    out = []
    for i, node in enumerate(nodes):
        out += [node] * (per + (1 if i < extra else 0))
    return out


def run_args(shape: str, tasks: int) -> list[str]:
    return [
        str(STRATA_BIN), "run", "--json", "-q", "--shape", shape, "--tasks", str(tasks),
        "--data-size", str(DATA), "--iterations", str(ITERATIONS),
    ]  # fmt: skip


def check_report(report: dict, task_nodes: list[str], across_method: str = "mpi") -> None:
    """Every edge delivered every iteration's exact data, by the method its nodes imply."""
    assert report["checksum_errors"] == 0
    names = [f"t{i}" for i in range(len(task_nodes))]
    node = dict(zip(names, task_nodes, strict=True))
    for edge in report["edges"]:
        across = node[edge["from"]] != node[edge["to"]]
        assert edge["across_nodes"] == across, edge
        assert edge["method"] == (across_method if across else "shm"), edge
        assert edge["samples"] == ITERATIONS, edge
        producer = names.index(edge["from"])
        assert edge["digest"] == expected_digest(producer, DATA // 8, WARMUP + ITERATIONS), edge


@pytest.fixture
def shm_dir(tmp_path) -> Path:
    """The tests' own segment directory (STRATA_SHM_DIR), so that other runs on the machine do not count."""
    path = tmp_path / "shm"
    path.mkdir(mode=0o700)
    return path


def leftovers(shm_dir: Path) -> list[str]:
    return sorted(p.name for p in shm_dir.iterdir())


@pytest.fixture(scope="module")
def emulation_ready():
    require(os.geteuid() == 0, "root (network namespaces, tc, cgroups)")
    require(Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us").exists(), "cgroup v1 cpu controller")
    require(STRATA_BIN.exists(), f"{STRATA_BIN} (build the default preset)")
    require(shutil.which("mpiexec") is not None, "mpiexec (MPICH)")


def emulate(script: Path, timeout: int) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(EMULATE), "--nodes", "n0=none,n1=none", "--rate", "none", "--", "sh", str(script)],
        capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def link_bytes(stderr: str) -> dict[str, int]:
    """What each emulated node received over its link, from emulate's closing lines."""
    return {m[0]: int(m[1]) for m in re.findall(r"emulate: link (\w+): received (\d+) B", stderr)}


@pytest.mark.parametrize("shape,tasks", [("pipeline", 4), ("scatter-gather", 6)])
def test_a_workflow_moves_the_same_data_on_one_node_and_split_over_two_emulated_nodes(
    tmp_path, shm_dir, emulation_ready, shape, tasks
):
    env = {**os.environ, "STRATA_SHM_DIR": str(shm_dir)}
    one = subprocess.run(run_args(shape, tasks), capture_output=True, text=True, timeout=120, env=env)
    assert one.returncode == 0, one.stderr
    one_node = json.loads(one.stdout)
    assert one_node["task_nodes"] == []
    check_report(one_node, ["here"] * tasks)

    hosts = tmp_path / "hosts"
    hosts.write_text(
        "# every other task on n1\nn0 " + " ".join(f"t{i}" for i in range(0, tasks, 2)) + "\nn1\n"
    )
    split = " ".join(run_args(shape, tasks)) + " --nodes n0,n1"
    interleaved = " ".join(run_args(shape, tasks)) + f" --hosts {hosts}"
    script = tmp_path / "split.sh"
    script.write_text(
        f"export STRATA_SHM_DIR={shm_dir}\n{split} > {tmp_path}/split.json\n{interleaved} > {tmp_path}/interleaved.json\n"
    )
    run = emulate(script, 250)
    assert run.returncode == 0, run.stderr
    blocks = json.loads((tmp_path / "split.json").read_text())
    alternate = json.loads((tmp_path / "interleaved.json").read_text())

    assert blocks["task_nodes"] == block_nodes(tasks, ["n0", "n1"])
    check_report(blocks, blocks["task_nodes"])
    assert alternate["task_nodes"] == ["n0" if i % 2 == 0 else "n1" for i in range(tasks)]
    check_report(alternate, alternate["task_nodes"])
    for placed in (blocks, alternate):
        assert [e["digest"] for e in placed["edges"]] == [e["digest"] for e in one_node["edges"]]
    # The MPI edges' data went over the emulated links: n1 received at least what crosses to it.
    to_n1 = sum(crossing_bytes(placed, tasks, "n1") for placed in (blocks, alternate))
    assert to_n1 > 0
    assert link_bytes(run.stderr)["n1"] >= to_n1, run.stderr
    assert leftovers(shm_dir) == []


def crossing_bytes(report: dict, tasks: int, to: str, once_per_producer: bool = False) -> int:
    """The data bytes the report's edges carried from the other node to node `to`: once per edge, or once per
    producer (the DSM: one chunk per producer, whose bytes reach a node once for all its consumers there)."""
    nodes = dict(zip([f"t{i}" for i in range(tasks)], report["task_nodes"], strict=True))
    crossing = [e for e in report["edges"] if nodes[e["from"]] != to and nodes[e["to"]] == to]
    count = len({e["from"] for e in crossing}) if once_per_producer else len(crossing)
    return DATA * (WARMUP + ITERATIONS) * count


@pytest.mark.parametrize("shape,tasks", [("pipeline", 4), ("scatter-gather", 6)])
def test_edges_across_nodes_go_through_the_dsm_by_choice_with_the_same_data(
    tmp_path, shm_dir, emulation_ready, shape, tasks
):
    script = tmp_path / "dsm.sh"
    script.write_text(
        f"export STRATA_SHM_DIR={shm_dir}\n"
        + " ".join(run_args(shape, tasks))
        + f" --nodes n0,n1 --across dsm > {tmp_path}/dsm.json\n"
    )
    run = emulate(script, 250)
    assert run.returncode == 0, run.stderr
    report = json.loads((tmp_path / "dsm.json").read_text())
    assert report["task_nodes"] == block_nodes(tasks, ["n0", "n1"])
    # The digests are computed here from the data's definition, as on one node and over MPI.
    check_report(report, report["task_nodes"], across_method="dsm")
    assert any(e["across_nodes"] for e in report["edges"])
    # Through the DSM too the bytes crossed the emulated link to n1.
    to_n1 = crossing_bytes(report, tasks, "n1", once_per_producer=True)
    assert to_n1 > 0
    assert link_bytes(run.stderr)["n1"] >= to_n1, run.stderr
    assert leftovers(shm_dir) == []


@pytest.mark.parametrize("across", ["mpi", "dsm"])
def test_a_task_killed_on_the_other_node_fails_the_run_instead_of_hanging(
    tmp_path, shm_dir, emulation_ready, across
):
    workflow = tmp_path / "slow.toml"
    subprocess.run(
        [str(STRATA_BIN), "run", "--shape", "pipeline", "--tasks", "4", "--data-size", "4096", "--iterations",
         "2000000", "--write", str(workflow)],
        check=True,
    )  # fmt: skip
    out = tmp_path / "run.out"
    script = tmp_path / "kill.sh"
    # t3 runs on n1: once the run is under way, it is SIGKILLed. The run is long (~20 s at CI's 90k iterations
    # per second, where 100000 iterations once ended before the kill) so that the kill lands mid-run, not in
    # MPI_Finalize after the report, which strata reports as a warning.
    script.write_text(
        textwrap.dedent(f"""\
        export STRATA_SHM_DIR={shm_dir}
        timeout 120 {STRATA_BIN} run {workflow} -q --nodes n0,n1 --across {across} > {out} 2>&1 &
        job=$!
        victim=""
        for i in $(seq 1 600); do
          run=$(pgrep -P $job -x strata || true)
          for p in $(pgrep -f "strata-workflow-task" || true); do
            [ -n "$run" ] && grep -q "strata-workflow-$run-" /proc/$p/cmdline 2>/dev/null || continue
            tr '\\0' '\\n' < /proc/$p/environ 2>/dev/null | grep -qx STRATA_VIDEO_NODE=n1 || continue
            victim=$p
          done
          [ -n "$victim" ] && break
          sleep 0.1
        done
        sleep 1
        echo "victim $victim"
        kill -{int(signal.SIGKILL)} $victim
        wait $job
        echo "run exited $?"
        """)
    )
    started = time.monotonic()
    run = emulate(script, 200)
    output = out.read_text()
    assert re.search(r"^victim \d+$", run.stdout, re.MULTILINE), run.stdout + run.stderr
    status = re.search(r"^run exited (\d+)$", run.stdout, re.MULTILINE)
    assert status, run.stdout + run.stderr
    assert status.group(1) not in ("0", "124"), output  # failed, and not by the hang bound
    assert "strata run: io_error:" in output, output
    # Named by whoever saw it first: hydra (the dead rank's node) or a surviving task (itself and the peer).
    assert re.search(r"RUNNING AT n1|strata-workflow-task: task t\d \(rank \d\): ", output), output
    assert time.monotonic() - started < 180
    assert leftovers(shm_dir) == [], output


def bad_run(*args: str, env: dict) -> tuple[subprocess.CompletedProcess, list[Path]]:
    """The run's result, and the run directories its pid left in /tmp."""
    require(STRATA_BIN.exists(), f"{STRATA_BIN} (build the default preset)")
    cmd = [str(STRATA_BIN), "run", "--shape", "pipeline", "--tasks", "4", "--iterations", "2", *args]
    with subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **env}
    ) as proc:
        out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err), list(
        Path("/tmp").glob(f"strata-run-{proc.pid}-*")
    )


def write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    "case,expected",
    [
        (lambda d: ["--nodes", "a,b,c,d,e"], r"invalid_argument: --nodes=a,b,c,d,e: 5 nodes for 4 tasks"),
        (lambda d: ["--nodes", "a,a"], r"invalid_argument: --nodes=a,a: node a named twice"),
        (lambda d: ["--nodes", "a,-x"], r"invalid_argument: --nodes=a,-x: node '-x': expected"),
        (lambda d: ["--hosts", str(d / "missing")], r"not_found: --hosts=\S+missing: cannot read the file"),
        (
            lambda d: ["--hosts", write(d / "h", "a t0 t9\n")],
            r"invalid_argument: --hosts=\S+:1: task t9: the workflow has no task",
        ),
        (
            lambda d: ["--hosts", write(d / "h", "a t0\nb t0\n")],
            r"invalid_argument: --hosts=\S+:2: task t0: placed on a already",
        ),
        (
            lambda d: ["--hosts", write(d / "h", "a t0\na t1\n")],
            r"invalid_argument: --hosts=\S+:2: node a has a line already",
        ),
        (
            lambda d: ["--hosts", write(d / "h", "a t0 t1\n")],
            r"invalid_argument: --hosts=\S+: task t2 is on no node",
        ),
        (lambda d: ["--hosts", write(d / "h", "# nothing\n")], r"invalid_argument: --hosts=\S+: no node"),
        (
            lambda d: ["--method", "threads", "--nodes", "a,b"],
            r"invalid_argument: --nodes=a,b: method threads runs every task",
        ),
        (
            lambda d: ["--across", "dsm"],
            r"invalid_argument: --across=dsm: edges cross nodes only with a placement \(give --nodes or --hosts\)",
        ),
        (
            lambda d: ["--nodes", "a,b", "--across", "tcp"],
            r"invalid_argument: --across=tcp: edges across nodes run as mpi or dsm",
        ),
    ],
)
def test_a_bad_placement_is_an_error_naming_the_option_value_and_cause(tmp_path, shm_dir, case, expected):
    run, run_dirs = bad_run(*case(tmp_path), env={"STRATA_SHM_DIR": str(shm_dir)})
    assert run.returncode == 2, run.stdout + run.stderr
    assert re.search("strata run: " + expected, run.stderr), run.stderr
    assert run_dirs == []
    assert leftovers(shm_dir) == []


def test_a_node_that_is_not_emulated_is_named_inside_the_emulation(shm_dir):
    run, _ = bad_run(
        "--nodes",
        "n0,n5",
        env={"STRATA_EMU_NODES": "n0 n1", "STRATA_EMU_MPIEXEC": "mpiexec", "STRATA_SHM_DIR": str(shm_dir)},
    )
    assert run.returncode == 2
    assert "--nodes=n0,n5: node n5 is not an emulated node (STRATA_EMU_NODES=n0 n1)" in run.stderr, run.stderr
