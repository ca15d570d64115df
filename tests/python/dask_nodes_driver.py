# SPDX-License-Identifier: MIT
"""Driver of test_python_dask_nodes.py, run by apps/video/emulate in the root namespace: a dask scheduler
and workers w0a, w0b on node n0 and w1 on node n1 (launched into the nodes' namespaces), a client here.
w0a makes an array in a strata segment; w0b (same node) and w1 (other node) each sum it and write into what
they received. Prints one JSON object: what each consumer saw, the bytes each node's link received during
each transfer, what w0a's serializer sent, and the segment's values afterwards.

    emulate --nodes n0=none,n1=none -- python dask_nodes_driver.py WORKDIR SEGMENT N
"""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np


def fill(n: int) -> np.ndarray:
    return np.sin(np.arange(n, dtype=np.float64))


def produce(segment: str, n: int):
    import strata

    a = strata.Segment(segment, "open_only").vector("a", np.float64, n)
    a[:] = fill(n)
    return a  # an array of the segment: strata.dask decides how it travels


def consume(a, index: int) -> dict:
    import strata

    total = float(a.sum())
    a[index] = -float(index)  # seen through the segment only if `a` is the segment's pages
    with open("/proc/self/maps") as maps:
        mapped = any(f"strata.{os.environ['DRIVER_SEGMENT']}.seg" in line for line in maps)
    return {
        "sum": total,
        "node": os.environ.get("STRATA_VIDEO_NODE", ""),
        "shared": strata.shared_origin(a) is not None,
        "mapped": mapped,
        "pid": os.getpid(),
    }


def received(link: str) -> int:
    with open(f"/sys/class/net/{link}/statistics/tx_bytes") as f:  # the bridge's send is the node's receive
        return int(f.read())


def start(node: str, command: str, log) -> subprocess.Popen:
    launcher = os.environ["STRATA_EMU_LAUNCHER"]
    return subprocess.Popen(
        [launcher, node, command], stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )


def stop(processes: list[subprocess.Popen]) -> None:
    for p in processes:
        try:
            os.killpg(p.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    for p in processes:
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def run(client, segment: str, n: int, workers: dict, links: dict) -> dict:
    import strata
    import strata.dask

    out = {}
    with strata.Segment(segment, "create_only", 2 * n * 8 + (1 << 20)) as seg:
        p = client.submit(produce, segment, n, workers=[workers["w0a"]], pure=False)
        # The array made, before counting the links; the client is in the root namespace (another node) and
        # receives it relayed by the scheduler: as data, equal to numpy's.
        here = p.result(timeout=120)
        out["client_shared"] = strata.shared_origin(here) is not None
        out["client_equal"] = bool(np.array_equal(here, fill(n)))
        del here
        for name, index in (("w0b", 1), ("w1", 2)):
            before = {node: received(link) for node, link in links.items()}
            result = client.submit(consume, p, index, workers=[workers[name]], pure=False).result(timeout=120)
            result["link_received"] = {node: received(link) - before[node] for node, link in links.items()}
            out[name] = result
        out["w0a_sent"] = client.run(strata.dask.transfers, workers=[workers["w0a"]])[workers["w0a"]]
        del p
        a = seg.find("a", np.float64)
        out["segment_head"] = a[:3].tolist()
        reference = fill(n)
        out["reference_sum_w0b"] = float(reference.sum())
        reference[1] = -1.0  # w0b's write, in the segment before w1 received the array
        out["reference_sum_w1"] = float(reference.sum())
        del a
        client.cancel(list(client.futures))
        deadline = time.monotonic() + 60
        while client.run(lambda dask_worker: len(dask_worker.data)) != dict.fromkeys(workers.values(), 0):
            if time.monotonic() > deadline:
                raise RuntimeError("the workers still hold the array after 60 s")
            time.sleep(0.2)
    return out


def main() -> int:
    workdir, segment, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    os.environ["DRIVER_SEGMENT"] = segment
    nodes = os.environ["STRATA_EMU_NODES"].split()
    addrs = dict(zip(nodes, os.environ["STRATA_EMU_ADDRS"].split(), strict=True))
    links = dict(zip(nodes, os.environ["STRATA_EMU_LINKS"].split(), strict=True))
    scheduler_file = os.path.join(workdir, "scheduler.json")
    py = sys.executable
    log = open(os.path.join(workdir, "cluster.log"), "w")  # noqa: SIM115 -- open while the cluster runs
    processes = [
        start("n0", f"exec {py} -m distributed.cli.dask_scheduler --host {addrs['n0']} --port 0 "
              f"--no-dashboard --scheduler-file {scheduler_file}", log),
    ]  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not os.path.exists(scheduler_file):
            if time.monotonic() > deadline or processes[0].poll() is not None:
                raise RuntimeError("the scheduler did not start (cluster.log)")
            time.sleep(0.2)
        for name, node in (("w0a", "n0"), ("w0b", "n0"), ("w1", "n1")):
            processes.append(
                start(node, f"exec env DRIVER_SEGMENT={segment} {py} -m distributed.cli.dask_worker "
                      f"--scheduler-file {scheduler_file} --host {addrs[node]} --name {name} --nthreads 1 "
                      f"--no-nanny --no-dashboard --preload strata.dask", log)
            )  # fmt: skip
        import distributed

        with distributed.Client(scheduler_file=scheduler_file, timeout=120) as client:
            client.wait_for_workers(3, timeout=120)
            workers = {w["name"]: a for a, w in client.scheduler_info()["workers"].items()}
            out = run(client, segment, n, workers, links)
    finally:
        stop(processes)
        log.close()
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
