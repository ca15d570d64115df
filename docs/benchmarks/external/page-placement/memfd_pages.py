"""Reads 128 MiB shmem files whose pages were allocated five ways (one instance each), in 1 MiB preadv calls.

The first look of page-placement/README.md; fresh_instances.py is the measurement that counts.
"""

import mmap
import os
import statistics
import time

SIZE = 128 << 20
PATTERN = bytes(range(256)) * 4096
MADV_POPULATE_WRITE = 23


def read_all(path):
    fd = os.open(path, os.O_RDONLY)
    view = memoryview(bytearray(1 << 20))
    start = time.perf_counter()
    offset = 0
    while offset < SIZE:
        offset += os.preadv(fd, [view], offset)
    elapsed = time.perf_counter() - start
    os.close(fd)
    return elapsed


def fill_mapping(fd):
    mapping = mmap.mmap(fd, SIZE)
    for offset in range(0, SIZE, len(PATTERN)):
        mapping[offset : offset + len(PATTERN)] = PATTERN
    return mapping


def main():
    faulted = os.memfd_create("faulted", 0)
    os.ftruncate(faulted, SIZE)
    keep = [fill_mapping(faulted)]
    written = os.memfd_create("written", 0)
    for offset in range(0, SIZE, len(PATTERN)):
        os.pwrite(written, PATTERN, offset)
    times = {"memfd-mmap": [], "memfd-write": [], "shm-file": []}
    for _ in range(7):
        path = "/dev/shm/memfd-pages-test.bin"
        with open(path, "wb") as f:
            for _ in range(0, SIZE, len(PATTERN)):
                f.write(PATTERN)
        times["shm-file"].append(read_all(path))
        os.unlink(path)
        times["memfd-mmap"].append(read_all(f"/proc/self/fd/{faulted}"))
        times["memfd-write"].append(read_all(f"/proc/self/fd/{written}"))
    allocated = os.memfd_create("allocated", 0)
    os.posix_fallocate(allocated, 0, SIZE)
    keep.append(fill_mapping(allocated))
    times["memfd-fallocate-mmap"] = [read_all(f"/proc/self/fd/{allocated}") for _ in range(7)]
    populated = os.memfd_create("populated", 0)
    os.ftruncate(populated, SIZE)
    mapping = mmap.mmap(populated, SIZE)
    mapping.madvise(MADV_POPULATE_WRITE)
    keep.append(mapping)
    for offset in range(0, SIZE, len(PATTERN)):
        mapping[offset : offset + len(PATTERN)] = PATTERN
    times["memfd-populate-mmap"] = [read_all(f"/proc/self/fd/{populated}") for _ in range(7)]
    for name, values in times.items():
        print(f"{name} {1e3 * statistics.median(values):.2f} ms")


if __name__ == "__main__":
    main()
