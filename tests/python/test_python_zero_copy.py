# SPDX-License-Identifier: MIT
"""Two Python processes exchange a 256 MB array through a strata port without
copying it: neither process's resident memory grows with the size, and both
processes map the same physical pages (the same file inode in /proc/<pid>/maps;
the same page frames in /proc/<pid>/pagemap when running as root); a write in
one is seen by the other. Memory, not time: a copy shows as 256 MB more resident
on a loaded machine as on a quiet one (bench/shm_handoff measures the cost)."""

import ast
import os
import struct
import subprocess
import sys
import textwrap

import numpy as np

CONSUMER = textwrap.dedent(
    """
    import os, sys
    import strata

    def resident_kb():
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))

    seg = strata.Segment(sys.argv[1], "open_only")
    port = seg.port("arrays", "consumer")
    out = sys.stdout
    for line in sys.stdin:  # one control line per message: touch every page or not
        before = resident_kb()
        with port.recv(timeout=30) as msg:
            a = msg.array
            if line.strip() == "touch":
                int(a[::4096].sum())  # fault every page in, for the pagemap comparison
            a[-1] = 7  # seen by the producer: the same pages
            reply = {"pid": os.getpid(), "address": a.__array_interface__["data"][0], "n": a.size,
                     "grew_kb": resident_kb() - before}  # fmt: skip
            del a
        print(repr(reply), file=out, flush=True)
    """
)


def mapping_of(pid: int, address: int):
    """(device, inode, path) of the mapping holding `address` in process `pid`."""
    with open(f"/proc/{pid}/maps") as maps:
        for line in maps:
            fields = line.split()
            lo, hi = (int(x, 16) for x in fields[0].split("-"))
            if lo <= address < hi:
                return fields[3], fields[4], fields[5] if len(fields) > 5 else ""
    raise AssertionError(f"address {address:#x} not mapped in {pid}")


def frame_of(pid: int, address: int) -> int:
    """The physical page frame of `address` (0 when the kernel hides it: not root)."""
    with open(f"/proc/{pid}/pagemap", "rb") as pm:
        pm.seek(address // 4096 * 8)
        (entry,) = struct.unpack("<Q", pm.read(8))
    return entry & ((1 << 55) - 1) if entry >> 63 else 0


def test_two_processes_share_a_256_mb_array_through_a_port_without_copying(strata_module, segment_name):
    strata = strata_module
    with strata.Segment(segment_name, "create_only", 600 << 20) as seg:
        port = seg.port("arrays", "producer", slots=2, consumers=1)
        consumer = subprocess.Popen(
            [sys.executable, "-c", CONSUMER, segment_name],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=os.environ,
        )
        try:

            def handoff(a, touch=False):
                """Sends `a` through the port; the consumer's reply."""
                consumer.stdin.write("touch\n" if touch else "view\n")
                consumer.stdin.flush()
                port.send(a, timeout=30)
                return ast.literal_eval(consumer.stdout.readline())

            def resident_kb():
                with open("/proc/self/status") as status:
                    return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))

            big = seg.vector("big", np.uint8, 256 << 20)
            big[:] = 1  # every page resident, so both processes can be compared page by page
            small = seg.vector("small", np.uint8, 1 << 20)
            small[:] = 1
            handoff(small)  # the consumer's first message pays its imports
            before = resident_kb()
            grew_kb = max(handoff(big)["grew_kb"] for _ in range(15))
            # A copy on either side would add 256 MB (262144 kB) of resident memory.
            assert grew_kb < 16 << 10, f"the consumer's resident memory grew by {grew_kb} kB on a handoff"
            assert resident_kb() - before < 16 << 10, "the producer's resident memory grew over 15 handoffs"
            reply = handoff(big, touch=True)
            assert reply["grew_kb"] >= 200 << 10, reply  # the check can fail: touched, the pages are resident
            assert reply["n"] == 256 << 20
            assert big[-1] == 7  # the consumer's write
            here = big.__array_interface__["data"][0]
            mine = mapping_of(os.getpid(), here)
            theirs = mapping_of(reply["pid"], reply["address"])
            assert mine == theirs and mine[1] != "0", (mine, theirs)
            assert seg.path in mine[2]
            if os.geteuid() == 0:
                for offset in (0, 128 << 20, (256 << 20) - 4096):
                    f = frame_of(os.getpid(), here + offset)
                    assert f != 0 and f == frame_of(reply["pid"], reply["address"] + offset), offset
            assert port.messages == 1 + 15 + 1
            del big, small
        finally:
            consumer.stdin.close()
            consumer.wait(timeout=30)
            port.close()


def test_a_port_fans_out_to_every_consumer_and_holds_the_slot_until_released(strata_module, segment_name):
    strata = strata_module
    with strata.Segment(segment_name, "create_only", 64 << 20) as seg:
        with (
            seg.port("p", "producer", slots=1, consumers=2) as out,
            seg.port("p", "consumer") as c1,
            seg.port("p", "consumer") as c2,
        ):
            a = seg.vector("a", np.float32, 1000)
            a[:] = 1.5
            out.send(a)
            m1, m2 = c1.recv(timeout=5), c2.recv(timeout=5)
            assert np.all(m1.array == 1.5) and np.all(m2.array == 1.5)
            m1.release()
            with np.testing.assert_raises(strata.Error):  # one slot, still held by the second consumer
                out.send(a, timeout=0.05)
            m2.release()
            out.send(seg.save(a), timeout=5)  # a Handle works too
            for c in (c1, c2):
                with c.recv(timeout=5) as m:
                    assert m.array.dtype == np.float32
            with np.testing.assert_raises(strata.Error) as e:
                c1.recv(timeout=0.05)
            assert e.exception.code == "timeout"
            out.close()
            assert c1.recv(timeout=5) is None  # end of stream
            del a
