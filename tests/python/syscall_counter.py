# SPDX-License-Identifier: MIT
"""Counts the system calls of the calling thread without ptrace or seccomp, the twin of
src/core/syscall_counter.hpp: a perf counter on a tracepoint ("raw_syscalls/sys_enter" for every
call, "syscalls/sys_enter_futex" for futex calls), for this thread only.

    counter = SyscallCounter("raw_syscalls/sys_enter")    # OSError if the kernel offers none here
    before = counter.read()
    work()
    calls = counter.read() - before - 1                    # a read is itself one system call

The tracepoint's id is read from a mounted tracefs, or, where nothing mounted it, from a tracefs mounted for
the moment in a private mount namespace (`unshare --mount`, as root): no mount is left anywhere.
"""

from __future__ import annotations

import ctypes
import os
import platform
import struct
import subprocess

_SYS_PERF_EVENT_OPEN = {"x86_64": 298, "aarch64": 241}
_PERF_TYPE_TRACEPOINT = 2
_PERF_FLAG_FD_CLOEXEC = 8
_ATTR_SIZE = 128  # PERF_ATTR_SIZE_VER7; the fields after `config` stay zero (counting, enabled)


def _tracepoint_id(name: str) -> int:
    for root in ("/sys/kernel/tracing/events", "/sys/kernel/debug/tracing/events"):
        try:
            with open(f"{root}/{name}/id") as f:
                return int(f.read())
        except OSError:
            continue
    # tracefs mounted in a private mount namespace dies with it.
    script = 'mount -t tracefs tracefs /sys/kernel/tracing && cat "/sys/kernel/tracing/events/$1/id"'
    try:
        done = subprocess.run(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", name],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise OSError(f"no id for tracepoint {name}: tracefs is not mounted, and unshare failed: {e}") from e
    if done.returncode != 0 or not done.stdout.strip().isdigit():
        raise OSError(
            f"no id for tracepoint {name}: tracefs is not mounted, and mounting it in a private mount namespace "
            f"failed: {done.stderr.strip() or done.stdout.strip()} (needs root)"
        )
    return int(done.stdout)


class SyscallCounter:
    def __init__(self, tracepoint: str):
        number = _SYS_PERF_EVENT_OPEN.get(platform.machine())
        if number is None:
            raise OSError(f"perf_event_open: no system call number known for {platform.machine()}")
        attr = struct.pack("IIQ", _PERF_TYPE_TRACEPOINT, _ATTR_SIZE, _tracepoint_id(tracepoint))
        attr += bytes(_ATTR_SIZE - len(attr))
        libc = ctypes.CDLL(None, use_errno=True)
        fd = libc.syscall(
            ctypes.c_long(number),
            ctypes.c_char_p(attr),
            ctypes.c_int(0),
            ctypes.c_int(-1),
            ctypes.c_int(-1),
            ctypes.c_ulong(_PERF_FLAG_FD_CLOEXEC),
        )
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(
                err,
                f"perf_event_open(tracepoint {tracepoint}): {os.strerror(err)} "
                "(needs root, CAP_PERFMON or kernel.perf_event_paranoid <= -1)",
            )
        self.fd = fd

    def read(self) -> int:
        """Calls counted so far, including this read itself."""
        return int.from_bytes(os.read(self.fd, 8), "little")

    def close(self) -> None:
        os.close(self.fd)
