# SPDX-License-Identifier: MIT
"""The consumer of examples/python/producer.py (started by it).

    consumer.py SEGMENT

Opens the producer's segment, receives the array's handle from the port and
sees the producer's pages as a numpy array; it doubles every value in place.
"""

import sys

import strata

with strata.Segment(sys.argv[1], "open_only") as seg:
    with seg.port("arrays", "consumer") as port, port.recv(timeout=10) as msg:
        a = msg.array  # the producer's vector: a view of the same pages
        print(f"consumer: sum {a.sum():.0f}, doubling it in place", flush=True)
        a *= 2
        del a
