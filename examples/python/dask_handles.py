# SPDX-License-Identifier: MIT
"""dask.distributed passes strata handles between worker processes, never the arrays.

    .venv/bin/python examples/python/dask_handles.py

A LocalCluster of two worker processes: a task on one worker makes a 64 MiB
array in a strata segment and returns its handle; a task on the other loads
the handle (the same pages, no copy) and sums the array. What dask stores and
moves between the workers is the handle, tens of bytes.

The tasks do not close() their segment: they let it detach when its last
array is collected. A dask worker samples its task thread's frames (its
profiler), and a sampled frame briefly keeps that frame's arrays alive after
`del`, so an explicit close() there can meet a live array and refuse (busy).
"""

import os

import numpy as np
import strata
from distributed import Client, LocalCluster

N = 8 << 20  # float64: 64 MiB


def produce(segment: str):
    seg = strata.Segment(segment, "open_only")
    a = seg.vector("field", np.float64, N)
    a[:] = 0.5
    return seg.save(a)


def consume(segment: str, handle) -> float:
    seg = strata.Segment(segment, "open_only")
    a = seg.load(handle)  # checked: segment, generation, offset, type
    return float(a.sum())


if __name__ == "__main__":
    name = f"example-dask-{os.getpid()}"
    with (
        strata.Segment(name, "create_only", size=128 << 20),
        LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None, silence_logs=50) as cluster,
        Client(cluster) as client,
    ):
        first, second = client.scheduler_info()["workers"]
        handle = client.submit(produce, name, workers=[first], pure=False)
        total = client.submit(consume, name, handle, workers=[second], pure=False)
        print(f"worker 2 summed worker 1's array of {N} float64: {total.result():.0f}")
        stored = client.nbytes(summary=False)[handle.key]
        print(
            f"dask held {'less' if stored < 1024 else 'more'} than 1 KiB for it: a {type(handle.result()).__name__}"
        )
