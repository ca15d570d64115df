# SPDX-License-Identifier: MIT
"""The floor of the kernel's FUSE write path under strata-fsd's output capture.

    .venv/bin/python bench/external/fuse_bound.py [--size-mb 128] [--chunk-kib 1024]
        [--repeats 11] [--out DIR] [--bin-dir DIR] [--no-fsd] [--report-only]

Issue 29: the target "output capture <= 1.2x writing a tmpfs file" is missed
by strata-fsd (docs/benchmarks/external/results.md). Is the target reachable
through FUSE at all on this kernel? This writes the benchmark's output with
the benchmark's program (bench_external_writer: SIZE bytes in fwrite calls of
CHUNK) into (i) a tmpfs file, (ii) fuse_sink --sink discard, (iii) fuse_sink
--sink copy and (iv) strata-fsd's output, captured as bench_external_harness
captures it (out, started, the program, take, end). fuse_sink (fuse_sink.c)
is mounted and served as strata-fsd serves an output, without strata's code:
its costs are the kernel path's, paid by any daemon. Configurations are
interleaved, in an order rotated per repeat; figures are medians.

Every sample checks its bytes: the size the file system reports, the content
read back (the copy sink, strata-fsd), and each sink's own count of the
bytes it took (its last line, after the unmount). Every mount is unmounted
(fusermount3 -u) and every directory removed on every way out, then checked.
Writes results.json and README.md to --out (default, in a source tree:
docs/benchmarks/external/fuse-bound).

Exit status: 0; 1 on a failure; 2 for bad arguments; 77 when FUSE is missing
(/dev/fuse, fusermount3), a failure instead under CI=true.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import json
import os
import platform
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
CONFIGS = ["tmpfs", "sink-discard", "sink-copy", "strata-fsd"]
START_TIMEOUT = 10.0


class Failure(Exception):
    """A wrong byte count, a mount that failed or stayed: the run is void."""


def pattern(chunk: int) -> bytes:
    """The bytes writer.c writes, chunk after chunk."""
    return bytes((i * 131) & 0xFF for i in range(chunk))


def check_content(fd: int, size: int, chunk: bytes, what: str) -> None:
    for at in range(0, size, len(chunk)):
        want = chunk[: min(len(chunk), size - at)]
        if os.pread(fd, len(want), at) != want:
            raise Failure(f"{what}: the bytes at offset {at} are not the ones written")


def mounted(path: Path) -> bool:
    text = Path("/proc/self/mountinfo").read_text()
    return any(line.split()[4] == str(path) for line in text.splitlines())


def read_line(proc: subprocess.Popen, what: str, timeout: float) -> str:
    """One line of a daemon started with bufsize=0, so nothing after it is read ahead and lost."""
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    line = proc.stdout.readline() if ready else b""
    if not line:
        raise Failure(f"{what} said nothing within {timeout} s (exit status {proc.poll()})")
    return line.decode().strip()


class Writer:
    """bench_external_writer, started and waiting for its go byte."""

    def __init__(self, bin_dir: Path, path: str, size: int, chunk: int):
        argv = [str(bin_dir / "bench_external_writer"), path, str(size), str(chunk)]
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.pid = self.proc.pid

    def finish(self) -> float:
        try:
            out, _ = self.proc.communicate(b"g", timeout=120)
        except subprocess.TimeoutExpired:
            self.proc.kill()  # stuck in the file system: it must not keep the mount busy
            self.proc.wait()
            raise Failure("bench_external_writer did not finish within 120 s") from None
        if self.proc.returncode != 0:
            raise Failure(f"bench_external_writer exited with {self.proc.returncode}")
        return float(out)


class Sink:
    """fuse_sink mounted on a private directory."""

    def __init__(self, binary: Path, mode: str, mount_point: Path):
        self.mode = mode
        self.mount_point = mount_point
        self.file = mount_point / "out"
        self.totals: dict[str, int] = {}
        mount_point.mkdir(mode=0o700)
        argv = [str(binary), "--sink", mode, "--mount", str(mount_point), "--owner", str(os.getpid())]
        self.proc = subprocess.Popen(
            argv, bufsize=0, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, start_new_session=True
        )
        self.libfuse = ""

    def wait_ready(self) -> None:
        said = read_line(self.proc, f"fuse_sink --sink {self.mode}", START_TIMEOUT)
        if not said.startswith("ready"):
            raise Failure(f"fuse_sink --sink {self.mode}: {said}")
        self.libfuse = said.split()[-1]

    def unmount(self) -> None:
        """fusermount3 -u; the sink then prints its totals and exits."""
        if mounted(self.mount_point):
            subprocess.run(["fusermount3", "-u", str(self.mount_point)], check=False)
        if mounted(self.mount_point):  # busy, or its daemon died: detach it now
            subprocess.run(["fusermount3", "-u", "-z", str(self.mount_point)], check=False)
        try:
            out, _ = self.proc.communicate(timeout=START_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, _ = self.proc.communicate()
        words = out.decode().split()
        self.totals = {words[i]: int(words[i + 1]) for i in range(0, len(words) - 1, 2)}


class Zmq:
    """A REQ socket on libzmq (strata-fsd's control protocol), through ctypes."""

    REQ, LINGER, RCVTIMEO = 3, 17, 27

    def __init__(self, endpoint: str):
        lib = ctypes.CDLL(ctypes.util.find_library("zmq") or "libzmq.so.5", use_errno=True)
        vp = ctypes.c_void_p
        lib.zmq_ctx_new.restype = vp
        lib.zmq_socket.restype = vp
        lib.zmq_socket.argtypes = [vp, ctypes.c_int]
        lib.zmq_setsockopt.argtypes = [vp, ctypes.c_int, vp, ctypes.c_size_t]
        lib.zmq_connect.argtypes = [vp, ctypes.c_char_p]
        lib.zmq_send.argtypes = [vp, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int]
        lib.zmq_recv.argtypes = [vp, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int]
        lib.zmq_close.argtypes = [vp]
        lib.zmq_ctx_term.argtypes = [vp]
        self.lib = lib
        self.context = lib.zmq_ctx_new()
        self.socket = lib.zmq_socket(self.context, self.REQ)
        for option, value in ((self.LINGER, 0), (self.RCVTIMEO, 10000)):
            v = ctypes.c_int(value)
            lib.zmq_setsockopt(self.socket, option, ctypes.byref(v), ctypes.sizeof(v))
        lib.zmq_connect(self.socket, endpoint.encode())
        self.reply = ctypes.create_string_buffer(4096)

    def request(self, text: str) -> str:
        data = text.encode()
        if self.lib.zmq_send(self.socket, data, len(data), 0) < 0:
            raise Failure(f"strata-fsd: cannot send '{text}': {os.strerror(ctypes.get_errno())}")
        n = self.lib.zmq_recv(self.socket, self.reply, len(self.reply), 0)
        if n < 0:
            raise Failure(f"strata-fsd: no answer to '{text}': {os.strerror(ctypes.get_errno())}")
        said = self.reply.raw[: min(n, len(self.reply))].decode()
        if said != "ok" and not said.startswith("ok "):
            raise Failure(f"strata-fsd: '{text}': {said}")
        return said[3:]

    def close(self) -> None:
        self.lib.zmq_close(self.socket)
        self.lib.zmq_ctx_term(self.context)


class StrataFsd:
    """strata-fsd on its private directory, driven as FuseExposure drives it."""

    def __init__(self, binary: Path, directory: Path):
        self.dir = directory
        self.mount_point = directory / "mnt"
        directory.mkdir(mode=0o700)
        self.mount_point.mkdir(mode=0o700)
        # Its ready line comes on descriptor 1: the daemon closes the others it inherits.
        argv = [str(binary), "--dir", str(directory), "--owner", str(os.getpid()), "--ready-fd", "1"]
        self.proc = subprocess.Popen(
            argv, bufsize=0, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, start_new_session=True
        )
        self.zmq: Zmq | None = None

    def wait_ready(self) -> None:
        said = read_line(self.proc, "strata-fsd", START_TIMEOUT)
        if said != "ready":
            raise Failure(f"strata-fsd: {said}")
        self.zmq = Zmq(f"ipc://{self.dir}/ctl")

    def stop(self) -> None:
        """quit (else SIGTERM): the daemon unmounts and removes its directory."""
        try:
            if self.zmq is None or self.proc.poll() is not None:
                raise Failure("no control socket")
            self.zmq.request("quit")
        except Failure:
            if self.proc.poll() is None:
                self.proc.terminate()
        if self.zmq is not None:
            self.zmq.close()
        try:
            self.proc.wait(timeout=START_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if mounted(self.mount_point):
            subprocess.run(["fusermount3", "-u", "-z", str(self.mount_point)], check=False)
        shutil.rmtree(self.dir, ignore_errors=True)


class Bench:
    def __init__(self, args: argparse.Namespace, work: Path, tmpfs_dir: Path):
        self.a = args
        self.size = args.size_mb << 20
        self.chunk_bytes = args.chunk_kib << 10
        self.chunk = pattern(self.chunk_bytes)
        self.tmpfs_dir = tmpfs_dir
        self.samples: list[dict] = []
        self.sinks = {}
        self.fsd = None
        self.task = 0
        self.work = work

    def start(self) -> None:
        # Each is recorded before it may fail, so that stop() finds it.
        for mode in ("discard", "copy"):
            self.sinks[mode] = Sink(self.a.bin_dir / "bench_external_fuse_sink", mode, self.work / mode)
            self.sinks[mode].wait_ready()
        if not self.a.no_fsd:
            self.fsd = StrataFsd(self.a.bin_dir / "strata-fsd", self.work / "fsd")
            self.fsd.wait_ready()

    def stop(self) -> None:
        """Unmounts everything that is mounted, whatever happened before."""
        for sink in self.sinks.values():
            sink.unmount()
        if self.fsd is not None:
            self.fsd.stop()

    def write(self, path: str, started=None) -> float:
        writer = Writer(self.a.bin_dir, path, self.size, self.chunk_bytes)
        if started is not None:
            started(writer.pid)
        return writer.finish()

    def tmpfs(self) -> tuple[float, float]:
        path = self.tmpfs_dir / "out"
        seconds = self.write(str(path))
        if path.stat().st_size != self.size:
            raise Failure(f"the tmpfs file holds {path.stat().st_size} bytes, not {self.size}")
        path.unlink()  # its pages are freed here, outside the clock, as the harness does
        return seconds, 0.0

    def sink(self, mode: str) -> tuple[float, float]:
        sink = self.sinks[mode]
        seconds = self.write(str(sink.file))
        if sink.file.stat().st_size != self.size:
            raise Failure(f"sink {mode}: the file holds {sink.file.stat().st_size} bytes, not {self.size}")
        if mode == "copy":
            fd = os.open(sink.file, os.O_RDONLY)
            try:
                check_content(fd, self.size, self.chunk, "sink copy")
            finally:
                os.close(fd)
        os.truncate(sink.file, 0)  # frees the copy's pages outside the clock
        return seconds, 0.0

    def strata_fsd(self) -> tuple[float, float]:
        self.task += 1
        zmq = self.fsd.zmq
        path = zmq.request(f"out {self.task} 2")
        seconds = self.write(path, lambda pid: zmq.request(f"started {self.task} {pid}"))
        start = time.perf_counter()
        fd_word, size_word = zmq.request(f"take {self.task} 2").split()
        fd = os.open(f"/proc/{self.fsd.proc.pid}/fd/{fd_word}", os.O_RDWR | os.O_CLOEXEC)
        capture = time.perf_counter() - start
        try:
            if int(size_word) != self.size:
                raise Failure(f"strata-fsd's output holds {size_word} bytes, not {self.size}")
            check_content(fd, self.size, self.chunk, "strata-fsd output")
        finally:
            os.close(fd)
        zmq.request(f"end {self.task}")
        return seconds, capture

    def run(self) -> None:
        bodies = {
            "tmpfs": self.tmpfs,
            "sink-discard": lambda: self.sink("discard"),
            "sink-copy": lambda: self.sink("copy"),
            "strata-fsd": self.strata_fsd,
        }
        configs = [c for c in CONFIGS if c != "strata-fsd" or not self.a.no_fsd]
        for rep in range(self.a.repeats):
            for k in range(len(configs)):
                config = configs[(k + rep) % len(configs)]
                print(f"repeat {rep + 1}/{self.a.repeats}: {config}", file=sys.stderr)
                program, capture = bodies[config]()
                self.samples.append(
                    {
                        "config": config,
                        "rep": rep,
                        "program_seconds": program,
                        "capture_seconds": capture,
                        "seconds": program + capture,
                    }
                )

    def check_totals(self) -> None:
        """Each sink's own count: every byte of every repeat, in requests of at most a chunk."""
        want = self.size * self.a.repeats
        for mode, sink in self.sinks.items():
            if sink.totals.get("bytes") != want:
                raise Failure(f"sink {mode} says it took {sink.totals.get('bytes')} bytes, not {want}")
            if not 0 < sink.totals.get("largest", 0) <= self.chunk_bytes:
                raise Failure(f"sink {mode} says its largest request was {sink.totals.get('largest')} bytes")


LABELS = {
    "tmpfs": "tmpfs file (fresh in /dev/shm)",
    "sink-discard": "fuse_sink --sink discard: the daemon drops each write",
    "sink-copy": "fuse_sink --sink copy: the daemon copies each write into a memfd",
    "strata-fsd": "strata-fsd output (out, started, the program, take)",
}


def judged_run(parameters: dict) -> str:
    """The judged benchmark's output figures, when they are in the tree and of the same sizes."""
    path = ROOT / "docs/benchmarks/external/results.json"
    if not path.exists():
        return ""
    doc = json.loads(path.read_text())
    same = ("size_bytes", "chunk_bytes")
    if any(doc["parameters"].get(k) != parameters[k] for k in same):
        return ""
    out = {
        c: [s["seconds"] for s in doc["samples"] if s["kind"] == "output" and s["config"] == c]
        for c in ("tmpfs", "fuse")
    }
    if not out["tmpfs"] or not out["fuse"]:
        return ""
    tmpfs, fuse = statistics.median(out["tmpfs"]), statistics.median(out["fuse"])
    return (
        f"The judged run of the external benchmark (docs/benchmarks/external/results.json, the same writer "
        f"and sizes, on Linux {doc['machine']['kernel']}) had strata-fsd's output at {fuse * 1e3:.2f} ms "
        f"against {tmpfs * 1e3:.2f} ms, {fuse / tmpfs:.2f}x."
    )


def derived(doc: dict) -> dict:
    """The figures the README computes from the medians and samples, kept in results.json beside them so
    that every figure the README quotes is in its results (scripts/check-report-figures)."""
    ms = {c: m["seconds"] * 1e3 for c, m in doc["medians"].items()}
    p, totals = doc["parameters"], doc["sinks"]["discard"]
    per_run = totals["writes"] / p["repeats"]
    out = {
        "keeping_the_bytes_ms": ms["sink-copy"] - ms["sink-discard"],
        "keeping_the_bytes_over_tmpfs": (ms["sink-copy"] - ms["sink-discard"]) / ms["tmpfs"],
        "discard_minus_tmpfs_per_request_us": (ms["sink-discard"] - ms["tmpfs"]) * 1e3 / per_run,
    }
    if "strata-fsd" in ms:
        copies = [s["seconds"] * 1e3 for s in doc["samples"] if s["config"] == "sink-copy"]
        out["strata_fsd_beyond_copy_ms"] = ms["strata-fsd"] - ms["sink-copy"]
        out["strata_fsd_beyond_copy_over_tmpfs"] = (ms["strata-fsd"] - ms["sink-copy"]) / ms["tmpfs"]
        out["copy_spread_ms"] = max(copies) - min(copies)
    return out


def verdict(doc: dict) -> str:
    r = doc["ratios_to_tmpfs"]
    ms = {c: m["seconds"] * 1e3 for c, m in doc["medians"].items()}
    target = doc["target_ratio"]
    d = doc["derived"]
    copy, discard = r["sink-copy"], r["sink-discard"]
    past = "past" if copy > target else "not past"
    text = (
        f"**For a daemon that keeps the bytes, the {target}x target is {past} the floor of the FUSE write path "
        f"on this kernel.** fuse_sink --sink copy, which does nothing but pwrite each request into a memfd (as "
        f"strata-fsd does), takes {copy:.2f}x the tmpfs write ({ms['sink-copy']:.2f} ms vs {ms['tmpfs']:.2f} ms). "
    )
    if discard > target:
        text += (
            f"The requests alone pass the target: dropping the bytes (--sink discard) takes {discard:.2f}x. "
        )
    else:
        text += (
            f"The requests themselves are not the bound: dropping the bytes (--sink discard) takes "
            f"{discard:.2f}x. Keeping them adds {d['keeping_the_bytes_ms']:.2f} ms, "
            f"{d['keeping_the_bytes_over_tmpfs']:.2f}x a tmpfs write: the kernel copies the "
            "program's bytes into the daemon's buffer, then the daemon does what tmpfs does, copying them into "
            "pages it allocates as they arrive. "
        )
    if "strata-fsd" in r:
        extra = d["strata_fsd_beyond_copy_ms"]
        text += (
            f"strata-fsd takes {r['strata-fsd']:.2f}x ({ms['strata-fsd']:.2f} ms): {abs(extra):.2f} ms "
            f"{'more' if extra >= 0 else 'less'} "
            f"({r['strata-fsd'] - copy:+.2f}x) over the copying sink, the part that is strata-fsd's own"
        )
        spread = d["copy_spread_ms"]
        text += (
            f" (less than the copying sink's own spread, {spread:.2f} ms). " if abs(extra) < spread else ". "
        )
    return text + (
        "Not measured here: a daemon whose output pages are allocated before the program starts "
        "(posix_fallocate, as ocrDbCreate does for a block) would keep the copy but take the allocation out "
        "of the program's time; that is open for outputs whose size is known in advance."
    )


def requests_sentence(doc: dict) -> str:
    p, totals = doc["parameters"], doc["sinks"]["discard"]
    per_run = totals["writes"] / p["repeats"]
    per_write = per_run / (p["size_bytes"] / p["chunk_bytes"])
    text = (
        f"Each run reached each sink as {per_run:.0f} write requests, {per_write:.2f} per fwrite of "
        f"{p['chunk_bytes'] >> 10} KiB, of at most {totals['largest']} bytes (the sinks' own counts: "
        f"{totals['bytes']} bytes over {p['repeats']} runs)."
    )
    if totals["largest"] < p["chunk_bytes"] and totals["largest"] % 4096 != 0:
        text += (
            f" A request carries at most 256 pages (max_pages) of the program's buffer, and the writer's "
            f"malloc'd buffer starts {4096 - totals['largest'] % 4096} bytes into a page: so a write of 1 MiB "
            f"spans 257 pages and reaches the daemon as two requests, the second of "
            f"{4096 - totals['largest'] % 4096} bytes."
        )
    return text + (
        f" Per request, the discarding sink's time differs from the tmpfs write's by "
        f"{doc['derived']['discard_minus_tmpfs_per_request_us']:.1f} µs: it "
        "pays the round trip to the daemon and the kernel's copy into the daemon's buffer, not the page "
        "allocation that tmpfs pays."
    )


def readme(doc: dict) -> str:
    p, m = doc["parameters"], doc["machine"]
    rows = [
        f"| {LABELS[c]} | {v['program_seconds'] * 1e3:.2f} | {v['capture_seconds'] * 1e3:.2f} | "
        f"{v['seconds'] * 1e3:.2f} | {doc['ratios_to_tmpfs'][c]:.2f}x |"
        for c, v in doc["medians"].items()
    ]
    scatter = ", ".join(
        f"{c} {min(s['seconds'] for s in doc['samples'] if s['config'] == c) * 1e3:.2f}"
        f"-{max(s['seconds'] for s in doc['samples'] if s['config'] == c) * 1e3:.2f}"
        for c in doc["medians"]
    )
    return "\n".join(
        [
            "# The floor of the FUSE write path (issue 29)",
            "",
            "Generated by `bench/external/fuse_bound.py` from [results.json](results.json); do not edit by hand.",
            "",
            verdict(doc),
            "",
            judged_run(p),
            "",
            f"Command: `{doc['command']}`  ",
            f"Machine: Linux {m['kernel']}, {m['cpus']} CPUs, libfuse {m['libfuse']}; load average at start "
            f"`{m['loadavg_start']}`, at end `{m['loadavg_end']}`.  ",
            f"Output: {p['size_bytes'] >> 20} MiB written by bench_external_writer (the external benchmark's "
            f"writer: fopen, fwrite of {p['chunk_bytes'] >> 10} KiB, fclose; its own clock). "
            f"{p['repeats']} repeats, configurations interleaved in an order rotated per repeat; medians; "
            "ratios are median / median of the tmpfs file.",
            "",
            "| configuration | program's write (ms) | capture (ms) | together (ms) | ratio to tmpfs |",
            "|---|---:|---:|---:|---:|",
            *rows,
            "",
            f"Scatter between repeats (lowest-highest, ms): {scatter}.",
            "",
            requests_sentence(doc),
            "",
            "## What the sink is",
            "",
            "`bench/external/fuse_sink.c`: a libfuse3 low-level daemon with one file, no strata code, mounted "
            "and served as strata-fsd serves an output (src/external/fsd/main.cpp, ops.cpp): libfuse's default "
            "session options (max_write and max_pages of 1 MiB), auto_inval_data off, direct I/O at open (a "
            "write(2) goes to the daemon as requests of at most 1 MiB, each answered before the next is sent "
            "and before write returns), no flush handler, "
            "attributes never cached, and the multi-threaded loop (at most 16 threads, 4 idle). `--sink copy` "
            "pwrites each request into a memfd whose pages were freed before the run (as a fresh tmpfs file's "
            "are); `--sink discard` only counts it. The writeback cache, splice and FUSE passthrough are not "
            "used, as in strata-fsd (docs/external-fs.md says why).",
            "",
            "## Rerun",
            "",
            "    cmake --build --preset default --target bench_external_fuse_sink bench_external_writer strata_fsd",
            "    scripts/quiet --max-load 1.2 .venv/bin/python bench/external/fuse_bound.py",
            "",
            "`--report-only` rewrites this README from results.json. CTest runs the measurement at a tiny size "
            "without strata-fsd "
            "(`bench.external.a_fuse_sink_mount_takes_every_write_and_unmounts`).",
            "",
        ]
    )


def fuse_missing() -> str:
    if not os.access("/dev/fuse", os.R_OK | os.W_OK):
        return "/dev/fuse is missing or not usable"
    if shutil.which("fusermount3") is None:
        return "fusermount3 is not in PATH"
    return ""


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().strip()


def summary(bench: Bench, args: argparse.Namespace, load_start: str) -> dict:
    medians = {}
    for config in dict.fromkeys(s["config"] for s in bench.samples):
        picked = [s for s in bench.samples if s["config"] == config]
        medians[config] = {
            key: statistics.median(s[key] for s in picked)
            for key in ("program_seconds", "capture_seconds", "seconds")
        }
    base = medians["tmpfs"]["seconds"]
    return {
        "command": os.environ.get("STRATA_BENCH_COMMAND", " ".join([".venv/bin/python", *sys.argv])),
        "parameters": {
            "size_bytes": bench.size,
            "chunk_bytes": bench.chunk_bytes,
            "repeats": args.repeats,
            "writer": "bench_external_writer (fopen, fwrite of chunk_bytes, fclose)",
        },
        "machine": {
            "kernel": platform.release(),
            "cpus": os.cpu_count(),
            "libfuse": bench.sinks["copy"].libfuse,
            "loadavg_start": load_start,
            "loadavg_end": loadavg(),
        },
        "sinks": {mode: sink.totals for mode, sink in bench.sinks.items()},
        "medians": medians,
        "ratios_to_tmpfs": {config: m["seconds"] / base for config, m in medians.items()},
        "target_ratio": 1.2,
        "samples": bench.samples,
    }


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--size-mb", type=int, default=128, help="the output's size (default 128, the benchmark's)"
    )
    p.add_argument("--chunk-kib", type=int, default=1024, help="the writer's fwrite size (default 1024)")
    p.add_argument("--repeats", type=int, default=11)
    p.add_argument("--out", type=Path, default=ROOT / "docs/benchmarks/external/fuse-bound")
    p.add_argument(
        "--bin-dir", type=Path, default=Path(os.environ.get("STRATA_BIN_DIR", ROOT / "build/default/bin"))
    )
    p.add_argument("--no-fsd", action="store_true", help="leave strata-fsd out (the sinks and tmpfs only)")
    p.add_argument("--report-only", action="store_true", help="rewrite README.md from --out's results.json")
    args = p.parse_args()
    if args.size_mb < 1 or args.chunk_kib < 1 or args.repeats < 1:
        p.error("--size-mb, --chunk-kib and --repeats must be at least 1")
    return args


def on_signal(signum, _frame):
    raise SystemExit(f"fuse_bound: {signal.Signals(signum).name}: unmounting and removing everything")


def main() -> int:
    args = parse()
    if args.report_only:
        doc = json.loads((args.out / "results.json").read_text())
        doc["derived"] = derived(doc)
        (args.out / "results.json").write_text(json.dumps(doc, indent=1) + "\n")
        (args.out / "README.md").write_text(readme(doc))
        return 0
    missing = fuse_missing()
    if missing:
        ci = os.environ.get("CI", "").lower() in ("true", "1")
        print(f"fuse_bound: missing capability: {missing}", file=sys.stderr)
        return 1 if ci else 77
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, on_signal)
    load_start = loadavg()
    # mkdtemp makes them 0700; resolved, as /proc/self/mountinfo names mount points.
    work = Path(tempfile.mkdtemp(prefix="strata-fuse-bound-")).resolve()
    tmpfs_dir = Path(tempfile.mkdtemp(prefix="strata-fuse-bound-", dir="/dev/shm")).resolve()
    bench = Bench(args, work, tmpfs_dir)
    failure = ""
    try:
        bench.start()
        bench.run()
    except Failure as e:
        failure = str(e)
    finally:
        bench.stop()
        shutil.rmtree(tmpfs_dir, ignore_errors=True)
        left = [
            str(p) for p in (*[s.mount_point for s in bench.sinks.values()], work / "fsd/mnt") if mounted(p)
        ]
        if not left:
            shutil.rmtree(work, ignore_errors=True)
    if left or work.exists() or tmpfs_dir.exists():
        failure = failure or f"left behind: mounts {left}, {work} or {tmpfs_dir}"
    if not failure:
        try:
            bench.check_totals()
        except Failure as e:
            failure = str(e)
    if failure:
        print(f"fuse_bound: {failure}", file=sys.stderr)
        return 1
    doc = summary(bench, args, load_start)
    doc["derived"] = derived(doc)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(doc, indent=1) + "\n")
    (args.out / "README.md").write_text(readme(doc))
    for config, ratio in doc["ratios_to_tmpfs"].items():
        print(f"{config}: {doc['medians'][config]['seconds'] * 1e3:.2f} ms, {ratio:.2f}x tmpfs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
