"""Reads 128 MiB shmem files whose pages were allocated four ways, six fresh instances each.

Each instance: a memfd filled through a mapping (pages faulted in one at a time), a memfd given its pages by
posix_fallocate then filled through a mapping, a memfd filled with pwrite, a /dev/shm file filled with write;
the benchmark's reader (bench/external/reader.c) reads it whole in 1 MiB chunks, 3 times (median per
instance). Run from the source tree after a build.
"""

import mmap
import os
import statistics
import subprocess

READER = "build/default/bin/bench_external_reader"
SIZE = 128 << 20
PATTERN = bytes(range(256)) * 4096


def run_reader(path, fds=()):
    command = [READER, path, str(SIZE), str(1 << 20), "chunks", "100"]
    reader = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, pass_fds=fds)
    out, _ = reader.communicate(b"x")
    return float(out.split()[0]) * 1e3


def make(kind):
    if kind == "tmpfs":
        path = "/dev/shm/fresh-instances-test.bin"
        with open(path, "wb") as f:
            for _ in range(0, SIZE, len(PATTERN)):
                f.write(PATTERN)
        return path
    fd = os.memfd_create("block", 0)
    os.ftruncate(fd, SIZE)
    if kind == "falloc":
        os.posix_fallocate(fd, 0, SIZE)
    if kind == "write":
        for offset in range(0, SIZE, len(PATTERN)):
            os.pwrite(fd, PATTERN, offset)
    else:
        mapping = mmap.mmap(fd, SIZE)
        for offset in range(0, SIZE, len(PATTERN)):
            mapping[offset : offset + len(PATTERN)] = PATTERN
        mapping.close()
    return fd


def main():
    per_instance = {}
    for _ in range(6):
        for kind in ("fault", "falloc", "write", "tmpfs"):
            made = make(kind)
            if kind == "tmpfs":
                median = statistics.median(run_reader(made) for _ in range(3))
                os.unlink(made)
            else:
                os.dup2(made, 10)
                median = statistics.median(run_reader("/proc/self/fd/10", (10,)) for _ in range(3))
                os.close(made)
            per_instance.setdefault(kind, []).append(round(median, 1))
    for kind, values in per_instance.items():
        print(kind, f"median {statistics.median(values):.1f}", values)


if __name__ == "__main__":
    main()
