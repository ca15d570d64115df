# SPDX-License-Identifier: MIT
"""The disk's random 4 KiB I/O, one request at a time (what bounds an out-of-core DHT: every
fault on a page that is not in memory is one such read, every evicted dirty page one such write).

Usage: randio.py --dir DIR [--size 1G] [--ops 20000] [--json FILE]
Writes a file of --size in DIR (O_EXCL, removed at once, kept open), then times --ops random
4 KiB reads and --ops random 4 KiB writes with O_DIRECT (queue depth 1) and prints one JSON
line: median latency and operations per second of each.
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
import random
import statistics
import time

PAGE = 4096


def size_of(text: str) -> int:
    units = {"K": 2**10, "M": 2**20, "G": 2**30}
    return int(float(text[:-1]) * units[text[-1]]) if text[-1] in units else int(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--size", default="1G")
    parser.add_argument("--ops", type=int, default=20000)
    parser.add_argument("--json")
    args = parser.parse_args()
    size = size_of(args.size) // (8 << 20) * (8 << 20)
    path = os.path.join(args.dir, f"sw-randio-{os.getpid()}.bin")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_DIRECT | os.O_CLOEXEC, 0o600)
    os.unlink(path)  # reachable through fd; nothing is left on exit
    try:
        chunk = mmap.mmap(-1, 8 << 20)  # page-aligned, as O_DIRECT needs
        chunk.write(os.urandom(8 << 20))
        for offset in range(0, size, 8 << 20):
            os.pwritev(fd, [chunk], offset)
        os.fsync(fd)
        page = mmap.mmap(-1, PAGE)
        page.write(os.urandom(PAGE))
        rng = random.Random(42)
        result = {"app": "randio", "file_bytes": size, "ops": args.ops, "dir": args.dir}
        for kind, call in (("read", os.preadv), ("write", os.pwritev)):
            latencies = []
            start = time.perf_counter()
            for _ in range(args.ops):
                offset = rng.randrange(size // PAGE) * PAGE
                t0 = time.perf_counter()
                call(fd, [page], offset)
                latencies.append(time.perf_counter() - t0)
            elapsed = time.perf_counter() - start
            result[f"random_{kind}_usec"] = round(1e6 * statistics.median(latencies), 1)
            result[f"random_{kind}_iops"] = round(args.ops / elapsed)
        os.fsync(fd)
    finally:
        os.close(fd)
    line = json.dumps(result)
    print(line)
    if args.json:
        with open(args.json, "a") as out:
            out.write(line + "\n")


if __name__ == "__main__":
    main()
