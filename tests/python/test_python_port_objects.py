# SPDX-License-Identifier: MIT
"""Ports carrying any picklable object or numpy array by handle, between two processes."""

import os
import subprocess
import sys

import numpy as np
import pytest

CONSUMER = r"""
import sys, strata, numpy as np
seg = strata.Segment(sys.argv[1], "open_only")
port = seg.port("objects", "consumer")
while True:
    m = port.recv(timeout=30)
    if m is None:
        break
    with m:
        o = m.object
        if isinstance(o, np.ndarray):
            print(repr(("array", o.dtype.name, o.shape, float(o.sum()), m.array is not None)), flush=True)
        else:
            print(repr(("object", o, m.array)), flush=True)
port.close()
"""


def test_a_port_carries_picklable_objects_and_arrays_to_another_process(strata_module, segment_name):
    import ast

    strata = strata_module
    with strata.Segment(segment_name, "create_only", 64 << 20) as seg:
        port = seg.port("objects", "producer", slots=4, consumers=1)
        consumer = subprocess.Popen(
            [sys.executable, "-c", CONSUMER, segment_name], stdout=subprocess.PIPE, text=True, env=os.environ
        )
        try:
            v = seg.vector("v", np.float64, 1000)
            v[:] = 2.0
            port.send(v)  # by handle, no copy
            port.send(np.ones(300, dtype=np.int32))  # a foreign array: one copy into the segment
            port.send({"step": 7, "names": ["a", "b"], "t": (1.5, None)})
            port.send(np.eye(3))  # 2-D: pickled
            port.send("text")
            port.close()
            lines = [ast.literal_eval(line) for line in consumer.stdout]
        finally:
            consumer.wait(timeout=60)
        assert consumer.returncode == 0
        assert lines == [
            ("array", "float64", (1000,), 2000.0, True),
            ("array", "int32", (300,), 300.0, True),
            ("object", {"step": 7, "names": ["a", "b"], "t": (1.5, None)}, None),
            ("array", "float64", (3, 3), 3.0, False),
            ("object", "text", None),
        ]
        del v


def test_a_segment_array_goes_by_handle_and_the_receiver_sees_its_pages(strata_module, segment_name):
    strata = strata_module
    with strata.Segment(segment_name, "create_only", 16 << 20) as seg:
        out = seg.port("p", "producer", slots=2, consumers=1)
        inp = seg.port("p", "consumer")
        v = seg.vector("v", np.int64, 10)
        out.send(v)
        with inp.recv(timeout=10) as m:
            assert m.array.__array_interface__["data"][0] == v.__array_interface__["data"][0]
            m.array[3] = 99
        assert v[3] == 99
        out.send(np.arange(5))
        with inp.recv(timeout=10) as m:
            # a copy, in the segment: a different address from the sender's array
            assert m.array.tolist() == [0, 1, 2, 3, 4]
        out.close()
        inp.close()
        del v


def test_an_unpicklable_object_raises_and_sends_nothing(strata_module, segment_name):
    strata = strata_module
    with strata.Segment(segment_name, "create_only", 16 << 20) as seg:
        out = seg.port("p", "producer", slots=2, consumers=1)
        inp = seg.port("p", "consumer")
        with pytest.raises(TypeError, match="obj: a function is neither an array nor picklable"):
            out.send(lambda: 1)
        assert out.messages == 0
        out.close()
        assert inp.recv(timeout=5) is None  # end of stream, nothing queued
        inp.close()


def test_a_segment_refuses_close_while_a_port_lives_in_it(strata_module, segment_name):
    # Unmapping under an open port used to crash the interpreter when the port was collected.
    strata = strata_module
    seg = strata.Segment(segment_name, "create_only", 16 << 20)
    port = seg.port("p", "producer", slots=2, consumers=1)
    with pytest.raises(strata.Error, match="port") as e:
        seg.close()
    assert e.value.code == "busy" and seg.is_open
    port.close()
    seg.close()
