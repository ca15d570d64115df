# SPDX-License-Identifier: MIT
"""Two Python processes share one numpy array: this one sends it by handle.

    .venv/bin/python examples/python/producer.py

The producer creates a segment (shared memory under /dev/shm), makes an
array of a million float64 in it, and sends it through a port: what goes
through the port is a 32-byte handle, not the 8 MB. It then starts
consumer.py, a second Python process, which receives the handle, sees the
same pages as a numpy array, and doubles them in place. The producer reads
the consumer's result from its own array: no copy was made either way.
The segment is removed when the last of the two closes it.
"""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import strata

N = 1_000_000
name = f"example-handoff-{os.getpid()}"
with strata.Segment(name, "create_only", size=64 << 20) as seg:
    a = seg.vector("field", np.float64, N)  # a numpy view of the segment: no copy
    a[:] = np.arange(N)
    with seg.port("arrays", "producer", slots=1, consumers=1) as port:
        port.send(a)  # sends the array's handle; the message waits for the consumer
        print(f"producer: sent float64[{a.size}] by handle", flush=True)
        consumer = Path(__file__).with_name("consumer.py")
        subprocess.run([sys.executable, str(consumer), name], check=True)
    print(f"producer: sum {a.sum():.0f}, the consumer's writes")  # seen in this process's own array
    del a
