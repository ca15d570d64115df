# SPDX-License-Identifier: MIT
"""A real Python workflow client: dask.distributed with a LocalCluster of
worker processes passes strata handles between tasks, never the arrays."""

import os

import numpy as np
import pytest

N = 8 << 20  # 8 Mi float64 = 64 MiB per array


def produce(segment_name: str, name: str, value: float):
    import strata

    seg = strata.Segment(segment_name, "open_only")
    a = seg.vector(name, np.float64, N)
    a[:] = value
    h = seg.save(a)
    del a
    return h, os.getpid()


def consume(segment_name: str, produced):
    import strata

    h, producer_pid = produced
    seg = strata.Segment(segment_name, "open_only")
    a = seg.load(h)
    total = float(a.sum())
    a[0] += 1.0  # a write the client sees: same pages, no copy came back
    del a
    return total, producer_pid, os.getpid()


def test_dask_workers_exchange_handles_and_the_data_stays_in_the_segment(strata_module, segment_name):
    distributed = (
        pytest.importorskip("distributed") if not os.environ.get("CI") else __import__("distributed")
    )
    strata = strata_module
    with strata.Segment(segment_name, "create_only", 256 << 20) as seg:
        with (
            distributed.LocalCluster(
                n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=50
            ) as cluster,
            distributed.Client(cluster) as client,
        ):
            workers = list(client.scheduler_info()["workers"])
            assert len(workers) == 2
            results = []
            for i, (w_produce, w_consume) in enumerate([(workers[0], workers[1]), (workers[1], workers[0])]):
                p = client.submit(
                    produce, segment_name, f"a{i}", float(i + 1), workers=[w_produce], pure=False
                )
                c = client.submit(consume, segment_name, p, workers=[w_consume], pure=False)
                results.append((p, c))
            for i, (p, c) in enumerate(results):
                total, producer_pid, consumer_pid = c.result(timeout=60)
                assert total == pytest.approx(N * (i + 1))
                assert producer_pid != consumer_pid != os.getpid()
                # What dask stored and moved is the handle: tens of bytes, not 64 MiB.
                sizes = client.nbytes(summary=False)
                assert sizes[p.key] < 1024, sizes
                assert sizes[c.key] < 1024, sizes
                assert isinstance(p.result()[0], strata.Handle)
                a = seg.find(f"a{i}", np.float64)
                assert a[0] == i + 2  # the consumer's write, seen by the client through the segment
                del a


def produce_array(segment_name: str, value: float):
    import strata

    a = strata.Segment(segment_name, "open_only").vector("plain", np.float64, N)
    a[:] = value
    return a[::2]  # a view of a segment vector, returned as a plain numpy array


def consume_array(a):
    import strata

    total = float(a.sum())
    a[0] = -1.0
    return total, strata.shared_origin(a) is not None, os.getpid()


def test_with_the_plugin_a_returned_segment_array_reaches_a_worker_of_the_node_by_handle(
    strata_module, segment_name
):
    distributed = (
        pytest.importorskip("distributed") if not os.environ.get("CI") else __import__("distributed")
    )
    import strata.dask

    with strata_module.Segment(segment_name, "create_only", 256 << 20) as seg:
        with (
            distributed.LocalCluster(
                n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=50
            ) as cluster,
            distributed.Client(cluster) as client,
        ):
            client.register_plugin(strata.dask.Plugin())
            w0, w1 = list(client.scheduler_info()["workers"])
            p = client.submit(produce_array, segment_name, 3.0, workers=[w0], pure=False)
            c = client.submit(consume_array, p, workers=[w1], pure=False)
            total, shared, pid = c.result(timeout=60)
            assert total == float(np.full(N // 2, 3.0).sum())
            assert shared and pid != os.getpid()
            a = seg.find("plain", np.float64)
            assert a[0] == -1.0 and a[1] == 3.0  # w1 wrote into the segment's pages: no copy
            sent = client.run(strata.dask.transfers)
            assert sent[w0]["handle"] >= 1 and sent[w0]["handle_bytes"] >= N // 2 * 8, sent
            del a, p, c
