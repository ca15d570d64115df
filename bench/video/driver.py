# SPDX-License-Identifier: MIT
"""Runs the video pipeline benchmark inside apps/video/emulate (bench/video/run starts it).

For each frame size: its input (ffmpeg's testsrc, made in --work and removed after the size's runs,
so that /dev/shm holds one input at a time), the kernel's time per frame on every node under its CPU
quota (the paper's method for the ideal time), a serial run on the gateway node (the checksum every
implementation's output must match), then --repeats rounds of every implementation in a rotated
order. Each run's record: the job time (the input's first decode to the output's last write, one
clock), mpiexec's wall time, per-rank counters (frames, busy and waiting time, messages and bytes),
the bytes that crossed each node's link, and the output's checksum. Writes the records to --out as
JSON.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench_progress import step  # noqa: E402  (bench/bench_progress.py: `strata bench`'s progress line)

SIZES = {"hd": (1920, 1080), "uhd1": (3840, 2160), "uhd2": (7680, 4320)}
IMPLS = {
    # name in the report: (strata-video --impl, DSM servers)
    "mpi-sync": ("mpi-sync", 0),
    "mpi-async": ("mpi-async", 0),
    "mpi-async-multi": ("mpi-async-multi", 0),
    "zmq": ("zmq", 0),
    "zmq-credit": ("zmq-credit", 0),
    "dsm": ("dsm", 1),
    "dsm-4servers": ("dsm", 4),
    "dsm-acquire": ("dsm-acquire", 1),
    # Paper 003's four DSM configurations: 1 or 4 servers, with the event log off (above) or on.
    "dsm-log": ("dsm", 1),
    "dsm-4servers-log": ("dsm", 4),
    # The paper's 4-server arrangement: each worker's requests through its own node's server.
    "dsm-4peers": ("dsm", 4),
    "dsm-4peers-log": ("dsm", 4),
}
# Implementations run with the DSM's event log on ($STRATA_DSM_EVENT_LOG, one file per rank,
# written after the job; its recording is inside the job time).
# Implementations given --credits; the others run with strata-video's own default (dsm: 1).
CREDITED = {"zmq-credit", "mpi-async-multi"}
EVENT_LOGGED = {"dsm-log", "dsm-4servers-log", "dsm-4peers-log"}
# Implementations whose DSM runs the super-peer topology ($STRATA_DSM_TOPOLOGY, docs/dsm.md).
SUPER_PEERS = {"dsm-4peers", "dsm-4peers-log"}


def emu() -> dict:
    env = os.environ
    needed = ["STRATA_EMU_NODES", "STRATA_EMU_ADDRS", "STRATA_EMU_LAUNCHER", "STRATA_EMU_MPIEXEC"]
    missing = [n for n in needed if n not in env]
    if missing:
        sys.exit(f"driver.py: run me inside apps/video/emulate ({', '.join(missing)} not set)")
    return {
        "nodes": env["STRATA_EMU_NODES"].split(),
        "addrs": env["STRATA_EMU_ADDRS"].split(),
        "links": env.get("STRATA_EMU_LINKS", "").split(),
        "launcher": env["STRATA_EMU_LAUNCHER"],
        "mpiexec": env["STRATA_EMU_MPIEXEC"].split(),
        "cpuacct": env.get("STRATA_EMU_CPUACCT", "").split(),
    }


def md5(path: Path) -> str:
    h = hashlib.md5()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def cpu_ns(groups: list[str]) -> list[int]:
    """CPU nanoseconds every node's processes used so far (its cpuacct group)."""
    return [int((Path(g) / "cpuacct.usage").read_text()) for g in groups]


def link_bytes(links: list[str]) -> list[dict]:
    out = []
    for link in links:
        stats = Path("/sys/class/net") / link / "statistics"
        # The root-namespace end: what it transmits, the node receives.
        out.append(
            {
                "received": int((stats / "tx_bytes").read_text()),
                "sent": int((stats / "rx_bytes").read_text()),
            }
        )
    return out


def make_input(path: Path, size: str, frames: int) -> None:
    """The size's input: ffmpeg's testsrc (no network), one byte per pixel grey, rawvideo in NUT (decoding
    it is a copy, so that decoding does not hide the transports)."""
    w, h = SIZES[size]
    subprocess.run(
        ["ffmpeg", "-v", "error", "-nostdin", "-f", "lavfi", "-i", f"testsrc=size={w}x{h}:rate=25",
         "-frames:v", str(frames), "-pix_fmt", "gray", "-c:v", "rawvideo", "-f", "nut", str(path)],
        check=True,
    )  # fmt: skip


def kernel_times(e: dict, binary: str, size: str, repeats: int, passes: int) -> dict:
    w, h = SIZES[size]
    times = {}
    for node in e["nodes"]:
        cmd = [e["launcher"], node, binary, "--kernel-time", f"{w}x{h}", "--repeats", str(repeats)]
        cmd += ["--kernel-passes", str(passes)]
        cmd += ["--kernel-seconds", "2"]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=True)
        # The mean over >= 2 s: the time per frame the node gives under its quota.
        times[node] = json.loads(r.stdout.strip().splitlines()[-1])["mean_s"]
    return times


def placement(e: dict, servers: int, workdir: Path) -> tuple[list[str], int]:
    """mpiexec arguments: input, output (and DSM servers) on the first node, one worker per node."""
    nodes = e["nodes"]
    if servers <= 1:
        first = 3 + servers
        hosts = ",".join([f"{nodes[0]}:{first}"] + [f"{n}:1" for n in nodes[1:]])
        return ["-hosts", hosts], first + len(nodes) - 1
    # Servers on the first `servers` nodes (rank i on node i), then input, output and workers.
    lines = [f"{nodes[i % len(nodes)]}:1" for i in range(servers)]
    lines += [f"{nodes[0]}:3"] + [f"{n}:1" for n in nodes[1:]]
    machinefile = workdir / f"machines-{servers}"
    machinefile.write_text("\n".join(lines) + "\n")
    return ["-f", str(machinefile)], servers + 2 + len(nodes)


def event_counts(run_dir: Path) -> tuple[int, int, int]:
    """Event logs, events kept and events dropped over every rank's log (each file's first line
    says both)."""
    logs = kept = dropped = 0
    for log in run_dir.glob("events-*.txt"):
        logs += 1
        with log.open() as f:
            m = re.search(r"(\d+) events, (\d+) dropped", f.readline())
        if m:
            kept += int(m.group(1))
            dropped += int(m.group(2))
    return logs, kept, dropped


def run_once(e, args, impl_name, size, video, reference, port) -> dict:
    impl, servers = IMPLS[impl_name]
    run_dir = Path(tempfile.mkdtemp(prefix="run-", dir=args.work))
    stats = run_dir / "stats"
    stats.mkdir()
    output = run_dir / "out.nut"
    where, n = placement(e, servers, run_dir)
    logged = impl_name in EVENT_LOGGED
    cmd = [
        *e["mpiexec"],
        *(["-genv", "STRATA_DSM_EVENT_LOG", str(run_dir / "events-%r.txt")] if logged else []),
        *(["-genv", "STRATA_DSM_TOPOLOGY", "super-peer"] if impl_name in SUPER_PEERS else []),
        *where,
        "-n",
        str(n),
        args.binary,
        "--impl",
        impl,
        "-i",
        str(video),
        "-o",
        str(output),
    ]
    cmd += ["--codec", "rawvideo", "--timeout-ms", str(args.timeout_ms), "--stats", str(stats)]
    if impl in CREDITED:
        cmd += ["--credits", str(args.credits)]
    cmd += [
        "--log-dir",
        str(run_dir),
        "--kernel-passes",
        str(args.kernel_passes),
    ]
    if servers:
        cmd += ["--dsm-servers", str(servers)]
    if impl.startswith("zmq"):
        cmd += ["--zmq-host", e["addrs"][0], "--zmq-port", str(port)]
    before = link_bytes(e["links"])
    cpu_before = cpu_ns(e["cpuacct"])
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout_ms / 1000 * 6 + 120)
    wall = time.monotonic() - t0
    after = link_bytes(e["links"])
    cpu_after = cpu_ns(e["cpuacct"])
    ranks = [json.loads(p.read_text()) for p in sorted(stats.glob("rank*.json"))]
    record = {
        "impl": impl_name,
        "size": size,
        "exit": proc.returncode,
        "wall_s": wall,
        "ranks": ranks,
        "links": [
            {"node": node, "received": a["received"] - b["received"], "sent": a["sent"] - b["sent"]}
            for node, a, b in zip(e["nodes"], after, before)
        ],
        # CPU of every process of the node from mpiexec's start to its end (start-up and shutdown
        # included, unlike the job time): what each implementation costs the gateway's cores.
        "node_cpu_s": {node: (a - b) / 1e9 for node, a, b in zip(e["nodes"], cpu_after, cpu_before)},
    }
    if proc.returncode != 0 or len(ranks) != n:
        logs = "".join(p.read_text() for p in sorted(run_dir.glob("rank*.log")))
        record["error"] = (
            (proc.stderr or proc.stdout)[-2000:]
            + "\n"
            + "\n".join(line for line in logs.splitlines() if "error" in line)
        )
    else:
        start = min(r["first_decode_unix"] for r in ranks if r["role"] == "input")
        done = max(r["done_unix"] for r in ranks if r["role"] == "output")
        record["job_s"] = done - start
        record["output_md5"] = md5(output)
        record["output_matches_serial"] = record["output_md5"] == reference
    if logged:
        logs, record["events"], record["events_dropped"] = event_counts(run_dir)
        if logs != n and "error" not in record:
            record["error"] = f"{logs} event logs written, one per rank expected ({n})"
    shutil.rmtree(run_dir, ignore_errors=True)
    return record


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--binary", required=True)
    p.add_argument("--work", required=True, type=Path, help="private directory for the inputs and outputs")
    p.add_argument("--sizes", default="hd,uhd1,uhd2")
    p.add_argument("--frames", default="hd=300,uhd1=100,uhd2=25")
    p.add_argument("--impls", default=",".join(IMPLS))
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--kernel-repeats", type=int, default=15)
    p.add_argument("--credits", type=int, default=2)
    p.add_argument(
        "--kernel-passes", type=int, default=1, help="the filter applied this many times per frame"
    )
    p.add_argument("--timeout-ms", type=int, default=30000)
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--config", default="{}", help="JSON recorded as the configuration")
    args = p.parse_args()
    e = emu()
    frames = dict(kv.split("=") for kv in args.frames.split(","))
    impls = args.impls.split(",")
    for name in impls:
        if name not in IMPLS:
            sys.exit(f"driver.py: --impls: unknown implementation {name} (known: {', '.join(IMPLS)})")
    result = {"config": json.loads(args.config), "sizes": {}, "records": []}
    result["config"].update(
        {
            "nodes": e["nodes"],
            "impls": impls,
            "repeats": args.repeats,
            "kernel_passes": args.kernel_passes,
            # report.py judges the targets against the bound with the gateway's own work on such runs
            "gateway_bound": True,
        }
    )
    port = 26000 + os.getpid() % 10000
    sizes = args.sizes.split(",")
    # Per size: the input, the kernel times, the serial run, then every implementation per repeat.
    total = len(sizes) * (3 + args.repeats * len(impls))
    done = 0
    for size in sizes:
        video = args.work / f"{size}.nut"
        w, h = SIZES[size]
        print(f"driver: {size} {w}x{h}, {frames[size]} frames: input, kernels", file=sys.stderr, flush=True)
        step(done + 1, total, f"{size}: making the input ({w}x{h}, {frames[size]} frames)")
        make_input(video, size, int(frames[size]))
        step(done + 2, total, f"{size}: kernel times")
        ktimes = kernel_times(e, args.binary, size, args.kernel_repeats, args.kernel_passes)
        serial_out = args.work / f"serial-{size}.nut"
        step(done + 3, total, f"{size}: serial run")
        done += 3
        serial_stats = Path(tempfile.mkdtemp(prefix="serial-", dir=args.work))
        t0 = time.monotonic()
        # --quiet: no progress line of its own inside the suite's (a terminal would otherwise get one).
        subprocess.run(
            [e["launcher"], e["nodes"][0], args.binary, "--impl", "serial", "-i", str(video), "-o", str(serial_out),
             "--codec", "rawvideo", "--overwrite", "--quiet", "--kernel-passes", str(args.kernel_passes),
             "--stats", str(serial_stats)],
            check=True, timeout=1800,
        )  # fmt: skip
        serial_s = time.monotonic() - t0
        # The serial run's job time on the distributed runs' clock: its first decode to its last write.
        serial_rank = json.loads(next(serial_stats.glob("rank*.json")).read_text())
        serial_job_s = serial_rank["done_unix"] - serial_rank["first_decode_unix"]
        shutil.rmtree(serial_stats, ignore_errors=True)
        reference = md5(serial_out)
        serial_out.unlink()
        result["sizes"][size] = {
            "width": w,
            "height": h,
            "frames": int(frames[size]),
            "frame_bytes": w * h,
            "kernel_s": ktimes,
            "serial_wall_s": serial_s,
            "serial_job_s": serial_job_s,
            "serial_md5": reference,
        }
        for r in range(args.repeats):
            order = impls[r % len(impls) :] + impls[: r % len(impls)]
            for name in order:
                done += 1
                step(done, total, f"{size}: repeat {r + 1} of {args.repeats}, {name}")
                port += 3
                rec = run_once(e, args, name, size, video, reference, port)
                rec["repeat"] = r
                result["records"].append(rec)
                status = f"{rec['job_s']:.2f} s" if "job_s" in rec else f"FAILED ({rec['exit']})"
                print(f"driver: {size} repeat {r} {name}: {status}", file=sys.stderr, flush=True)
        video.unlink()
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
