# SPDX-License-Identifier: MIT
"""Paper 002 at the paper's own scale (bench/umt/run --paper): §IV's one-node runs, Baseline vs UMT.

The suite (driver.py) runs small cases in seconds; this is the long run
outside CI (issue 30): the FWI mock-up at the paper's sizes (Y-slices of
1,521 KiB, 118 forward then 118 backward steps, I/O frequency 1 and 3, Table
I) and heat with a checkpoint every 15 iterations written with O_DIRECT and
through the page cache (Table III). Monitor `off` (the paper's Baseline)
against `ebpf` (its UMT: the runtime's default cover priority), interleaved
and repeated. Called by bench/umt/run --paper inside its cgroups; the trap
there removes them, and with them the throttles, on every exit.

What does not fit this machine is scaled, and results.json records how
(`scale`), so that paper_report.py can say it beside every figure:

* Cores. The paper's node has 28 cores. FWI keeps the paper's slices *per
  core*: 408 x cores / 28 slices (29 on 2 cores). All 408 would write 70 GiB
  per run at I/O frequency 1 (more than this disk has free) and take hours.
* Time. A task here computes k times faster than the paper's (k: the paper's
  CPU time per task, derived from its figures in PAPER_DERIVED, over ours from
  the calibration), and the throttled device is the paper's Optane (fio,
  §IV-A) per core, times this machine's cores, times k: a snapshot or
  checkpoint takes the same share of a task's compute time as on the paper's
  node. TIME_SCALE chooses FWI's compute per task; heat runs one sweep.
* Heat. The paper gives neither its grid nor its iteration count; the run
  takes the issue's 100 iterations with a checkpoint every 15, on a grid
  chosen for time and memory (HEAT). Its cells are 8-byte doubles where the
  paper's are 4 bytes (inferred: its write rate x 15 / 4 B is its figure of
  merit within 2 %), so the device is twice as fast again.

cgroup v1 blkio cannot throttle page-cache write-back (the flusher threads
write in the root group's name), so the buffered heat case writes back at the
raw disk's rate whatever the throttle: a third heat case, O_DIRECT without a
throttle, is the same device for a like-for-like buffered vs O_DIRECT pair.
"""

import argparse
import json
import os
import platform
import signal
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_progress import step  # noqa: E402
from driver import (  # noqa: E402
    VERDICT_MODE,
    RunFailed,
    calibrate,
    cpu_model,
    disk_of,
    run_program,
    set_throttle,
    summarize,
)

MIB = 1 << 20
MODES = ["off", VERDICT_MODE]  # Baseline, UMT
REPEATS = 3
# A paper-scale run takes minutes; a hang should not cost the hour.
RUN_TIMEOUT_S = 600

# The paper's node and device (§IV-A): two Xeon E5-2690v4, 28 cores; the
# Optane 905P's fio peak with 56 threads of 1 MiB requests.
PAPER_CORES = 28
OPTANE_MIB_S = {"read": 2500, "write": 2100}

# §IV-D2, Table I (one node, Optane): FOM in kilo volume cells per second,
# CPU in %, storage I/O in MiB/s; the speedup as the paper prints it.
FWI_PAPER = {
    "volume_zxy": [208, 208, 408],
    "slices": 408,
    # 208 x 208 cells of 36 bytes (9 floats: velocities and stresses). A multiple of 512 bytes, the
    # disk's logical block, so O_DIRECT takes it; not of 4 KiB, so ext4 serializes some of these writes
    # (unaligned to its blocks): kept, as it is the paper's size.
    "slice_kib": 1521,
    "steps": 118,
    "io_freqs": [1, 3],
    "fom_unit": "kc/s",
    "table": "Table I, one node, Optane",
    "rows": {
        "iof 3": {
            "speedup": 0.13,
            "baseline": {"fom": 12103, "cpu": 74.66, "write": 141.14, "read": 140.57},
            "umt": {"fom": 13714, "cpu": 96.64, "write": 157.08, "read": 162.25},
        },
        "iof 1": {
            "speedup": 0.13,
            "baseline": {"fom": 11883, "cpu": 75.01, "write": 409.21, "read": 406.77},
            "umt": {"fom": 13399, "cpu": 97.22, "write": 457.21, "read": 462.25},
        },
    },
}
# §IV-E1, Table III (one node, Optane, a checkpoint every 15 iterations; its
# non-buffered row is Table IV's): FOM in "cells/s" (millions, PAPER_DERIVED).
HEAT_PAPER = {
    "ckpt_every": 15,
    "fom_unit": "Mcells/s",
    "table": "Table III, one node, Optane, checkpoint every 15 iterations",
    "rows": {
        "buffered": {
            "speedup": 0.14,
            "baseline": {"fom": 4835, "cpu": 78.11, "write": 1242.85},
            "umt": {"fom": 5492, "cpu": 87.35, "write": 1408.89},
        },
        "non-buffered": {
            "speedup": 0.20,
            "baseline": {"fom": 4934, "cpu": 76.36, "write": 1239.09},
            "umt": {"fom": 5949, "cpu": 90.79, "write": 1485.96},
        },
    },
}


def paper_derived():
    """The paper's CPU time per unit of work, from its own figures (its Baselines, O_DIRECT, Optane)."""
    z, x, y = FWI_PAPER["volume_zxy"]
    fwi = FWI_PAPER["rows"]["iof 1"]["baseline"]
    # One step processes the volume's cells: s per step = cells / (kc/s x 1000); the node's
    # busy CPU over it, shared by the step's tasks (one per slice).
    step_s = z * x * y / (fwi["fom"] * 1e3)
    fwi_task_cpu_s = step_s * PAPER_CORES * fwi["cpu"] / 100 / FWI_PAPER["slices"]
    heat = HEAT_PAPER["rows"]["non-buffered"]["baseline"]
    heat_cell_cpu_ns = PAPER_CORES * heat["cpu"] / 100 / (heat["fom"] * 1e6) * 1e9
    # Checkpoint bytes per cell-iteration are cell_bytes / 15: the write rate gives the
    # cell-iteration rate; with 4-byte cells it is the FOM in millions (the ratio ~1), with 8 half.
    cell_rate_if_4_bytes = heat["write"] * MIB * HEAT_PAPER["ckpt_every"] / 4
    return {
        "fwi_step_s": step_s,
        "fwi_run_s": step_s * 2 * FWI_PAPER["steps"],
        "fwi_task_cpu_s": fwi_task_cpu_s,
        "heat_cell_cpu_ns": heat_cell_cpu_ns,
        "heat_cell_bytes": 4,
        "heat_write_rate_over_fom_if_4_bytes": cell_rate_if_4_bytes / (heat["fom"] * 1e6),
    }


# strata's choices, fixed before the run (issue 30).
TIME_SCALE = 2.5  # FWI's target: a task computes 2.5x faster than the paper's (76 ms -> 31 ms)
# Heat: the paper's grid is not known. 16384² doubles are 2 GiB (memory and a checkpoint file that fit
# with room) and ~35 s of compute per run on 2 cores at one sweep, the least compute per cell;
# blocks of 1024² are tasks of ~2.6 ms (the suite's ~3 ms) with 8 MiB checkpoint writes, 25,600 tasks.
HEAT = {"grid": 16384, "block": 1024, "iters": 100, "ckpt_every": 15, "sweeps": 1, "cell_bytes": 8}
# --quick: the same cases at a smoke run's size (a minute or two), to check the harness.
QUICK = {"fwi_steps": 8, "heat_grid": 4096, "heat_iters": 30}


def fwi_paper_cells(slices, slice_bytes):
    """The volume in the paper's cells (36 bytes each), so that FOMs are in its unit."""
    return slices * slice_bytes / 36


def plan(cal, directory, quick, only, cores):
    """(cases, scale): every configuration to run, and the numbers that scale the paper to this machine."""
    derived = paper_derived()
    slice_bytes = FWI_PAPER["slice_kib"] * 1024
    fwi_slices = max(cores, round(FWI_PAPER["slices"] * cores / PAPER_CORES))
    fwi_steps = QUICK["fwi_steps"] if quick else FWI_PAPER["steps"]
    sweep_s = cal["fwi_sweep_us_per_mib"] * 1e-6 * slice_bytes / MIB
    fwi_sweeps = max(1, round(derived["fwi_task_cpu_s"] / TIME_SCALE / sweep_s))
    fwi_task_s = fwi_sweeps * sweep_s
    fwi_k = derived["fwi_task_cpu_s"] / fwi_task_s
    # The paper's device per core, on this machine's cores, k times faster.
    per_core = cores / PAPER_CORES
    fwi_bps = {d: round(OPTANE_MIB_S[d] * MIB * per_core * fwi_k) for d in OPTANE_MIB_S}

    heat_grid = QUICK["heat_grid"] if quick else HEAT["grid"]
    heat_iters = QUICK["heat_iters"] if quick else HEAT["iters"]
    cell_s = HEAT["sweeps"] * cal["heat_sweep_us_per_256x256"] * 1e-6 / (256 * 256)
    heat_k = derived["heat_cell_cpu_ns"] * 1e-9 / cell_s
    byte_factor = HEAT["cell_bytes"] / derived["heat_cell_bytes"]
    heat_bps = {d: round(OPTANE_MIB_S[d] * MIB * per_core * heat_k * byte_factor) for d in OPTANE_MIB_S}
    scale = {
        "cores": cores,
        "paper_cores": PAPER_CORES,
        "time_scale_target": TIME_SCALE,
        "fwi": {
            "slices": fwi_slices,
            "slice_bytes": slice_bytes,
            "steps": fwi_steps,
            "sweeps": fwi_sweeps,
            "volume_factor": fwi_slices / FWI_PAPER["slices"],
            "task_cpu_s": fwi_task_s,
            "time_scale": fwi_k,
            "read_bps": fwi_bps["read"],
            "write_bps": fwi_bps["write"],
            "data_file_bytes": fwi_slices * fwi_steps * slice_bytes,
        },
        "heat": {
            "grid": heat_grid,
            "block": HEAT["block"],
            "iters": heat_iters,
            "ckpt_every": HEAT["ckpt_every"],
            "sweeps": HEAT["sweeps"],
            "cell_bytes": HEAT["cell_bytes"],
            "cell_cpu_ns": cell_s * 1e9,
            "time_scale": heat_k,
            "byte_factor": byte_factor,
            "read_bps": heat_bps["read"],
            "write_bps": heat_bps["write"],
            "grid_bytes": heat_grid * heat_grid * HEAT["cell_bytes"],
            "checkpoints": heat_iters // HEAT["ckpt_every"],
        },
    }

    cases = []
    if "fwi" in only:
        f = scale["fwi"]
        for iof in (3, 1):
            cases.append(
                {
                    "experiment": "fwi",
                    "label": f"{fwi_slices} slices x 1521 KiB, {fwi_steps} steps, io-freq {iof}, O_DIRECT",
                    "throttle": "paper device",
                    "program": "strata-umt-fwi",
                    "args": [
                        f"--slices={fwi_slices}",
                        f"--slice-kib={FWI_PAPER['slice_kib']}",
                        f"--steps={fwi_steps}",
                        f"--sweeps={fwi_sweeps}",
                        f"--io-freq={iof}",
                        "--direct=1",
                        f"--file={directory}/strata-umt-fwi-paper.dat",
                    ],
                    "read_bps": f["read_bps"],
                    "write_bps": f["write_bps"],
                    "paper_row": f"iof {iof}",
                    "tasks": fwi_slices * 2 * fwi_steps,
                    "task_cpu_s": fwi_task_s,
                    # Snapshot steps: 0, iof, 2 iof, ... (fwi.cpp), each written forward and read backward.
                    "io_bytes": dict.fromkeys(
                        ("read", "write"), fwi_slices * -(-fwi_steps // iof) * slice_bytes
                    ),
                    "fom_work": fwi_paper_cells(fwi_slices, slice_bytes) * 2 * fwi_steps / 1e3,
                }
            )
    if "heat" in only:
        h = scale["heat"]
        blocks = heat_grid // HEAT["block"]
        base = [
            f"--blocks={blocks}",
            f"--block-size={HEAT['block']}",
            f"--iters={heat_iters}",
            f"--sweeps={HEAT['sweeps']}",
            f"--ckpt-every={HEAT['ckpt_every']}",
            f"--file={directory}/strata-umt-heat-paper.dat",
        ]
        shape = f"{heat_grid}² in {blocks}x{blocks} blocks, {heat_iters} iterations, checkpoint every 15"
        for label, direct, throttle, paper_row in (
            ("O_DIRECT", 1, "paper device", "non-buffered"),
            ("buffered", 0, "paper device", "buffered"),
            ("O_DIRECT", 1, "none (the disk's own rate)", None),
        ):
            unthrottled = throttle.startswith("none")
            cases.append(
                {
                    "experiment": "heat",
                    "label": f"{shape}, {label}",
                    "throttle": throttle,
                    "program": "strata-umt-heat",
                    "args": [*base, f"--direct={direct}"],
                    "read_bps": 0 if unthrottled else h["read_bps"],
                    "write_bps": 0 if unthrottled else h["write_bps"],
                    "direct": bool(direct),
                    "paper_row": paper_row,
                    "tasks": blocks * blocks * heat_iters,
                    "task_cpu_s": cell_s * HEAT["block"] ** 2,
                    "io_bytes": {"write": h["checkpoints"] * h["grid_bytes"], "read": 0},
                    "fom_work": heat_grid * heat_grid * heat_iters / 1e6,
                }
            )
    return cases, scale


# The raw disk's rate, for the estimate only (a dd of 1521 KiB O_DIRECT writes on this VM: ~750 MiB/s).
RAW_DISK_BPS = 750 * MIB


def estimate_s(case, mode, cores):
    """A run's expected length, from the calibration: `off` waits for every transfer on its core
    (compute + device time); the monitor overlaps them (the longer of the two). Buffered I/O: compute."""
    compute = case["tasks"] * case["task_cpu_s"] / cores
    if case.get("direct", True):
        device = sum(case["io_bytes"][d] / (case[f"{d}_bps"] or RAW_DISK_BPS) for d in ("read", "write"))
    else:
        device = 0.0
    return compute + device if mode == "off" else max(compute, device)


def disk_bytes(disk):
    """Bytes read and written by the whole disk so far (/sys/block/<disk>/stat, 512-byte sectors)."""
    fields = Path(f"/sys/block/{disk}/stat").read_text().split()
    return int(fields[2]) * 512, int(fields[6]) * 512


def settle(data_file):
    """After a run: write back what it left dirty, and drop the data file's pages, so that every run
    starts from the same state (a buffered run would otherwise leave the next one its write-back)."""
    started = time.monotonic()
    os.sync()
    try:
        fd = os.open(data_file, os.O_RDONLY)
    except FileNotFoundError:
        return time.monotonic() - started
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    return time.monotonic() - started


def data_file(case):
    return next(a.split("=", 1)[1] for a in case["args"] if a.startswith("--file="))


def run_case(bin_dir, case, mode, nice, disk):
    """One run, with the disk's traffic while it ran and the write-back it left behind."""
    read0, written0 = disk_bytes(disk)
    started = time.monotonic()
    result = run_program(bin_dir / case["program"], case["args"], mode, nice, timeout=RUN_TIMEOUT_S)
    process_s = time.monotonic() - started
    read1, written1 = disk_bytes(disk)
    sync_s = settle(data_file(case))
    _, written2 = disk_bytes(disk)
    result.update(
        process_s=process_s,
        disk_read_mib_s=(read1 - read0) / MIB / process_s,
        disk_write_mib_s=(written1 - written0) / MIB / process_s,
        dirty_at_exit_mib=(written2 - written1) / MIB,
        sync_after_s=sync_s,
        fom=case["fom_work"] / result["wall_s"],
    )
    return result


def paper_medians(summary, runs):
    """driver.summarize's rows, plus the medians this report adds (disk traffic, write-back, FOM)."""
    for row in summary:
        members = [
            r
            for r in runs
            if (r["experiment"], r["label"], r["throttle"], r["mode"])
            == (row["experiment"], row["label"], row["throttle"], row["mode"])
        ]
        for key in (
            "disk_read_mib_s",
            "disk_write_mib_s",
            "dirty_at_exit_mib",
            "sync_after_s",
            "fom",
            "process_s",
        ):
            row[f"{key}_median"] = statistics.median(r[key] for r in members)
        row["cover"] = members[0].get("cover")
    return summary


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--json", required=True)
    parser.add_argument("--repeats", type=int, default=REPEATS)
    parser.add_argument("--dir", default="/var/tmp", help="where the data files go")
    parser.add_argument(
        "--quick", action="store_true", help="the same cases at a smoke run's size, one repeat"
    )
    parser.add_argument("--only", default="fwi,heat")
    parser.add_argument("--modes", default=",".join(MODES), help="off is the Baseline")
    parser.add_argument("--nice", type=int, default=0)
    return parser.parse_args()


def main():  # noqa: PLR0915
    args = parse_args()
    # bench/umt/run's trap ends the run on SIGTERM; exit through `finally` so the data files go too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    bin_dir = Path(args.bin_dir)
    cgroup = os.environ.get("STRATA_UMT_CGROUP")
    if not cgroup:
        sys.exit("paper.py: STRATA_UMT_CGROUP is not set; run bench/umt/run --paper")
    device, disk = disk_of(args.dir)
    only = set(args.only.split(","))
    modes = args.modes.split(",")
    repeats = 1 if args.quick else args.repeats
    cores = os.cpu_count()
    load_at_start = os.getloadavg()
    started = time.time()
    runs, failures = [], []
    cases = []
    try:
        set_throttle(cgroup, device, 0)
        step(0, 0, "calibrating")
        cal = calibrate(bin_dir, args.dir, args.nice)
        cases, scale = plan(cal, args.dir, args.quick, only, cores)
        estimate = repeats * sum(estimate_s(c, m, cores) for c in cases for m in modes)
        print(f"calibration: {cal}\nscale: {json.dumps(scale)}", flush=True)
        print(f"estimated: {estimate / 60:.0f} min of runs", flush=True)
        total = len(cases) * len(modes) * repeats
        for case in cases:
            set_throttle(cgroup, device, case["read_bps"], case["write_bps"])
            for repeat in range(repeats):
                # Rotate the order so that no mode always runs first after a throttle change.
                order = modes[repeat % len(modes) :] + modes[: repeat % len(modes)]
                for mode in order:
                    what = f"{case['experiment']} {case['label']} {case['throttle']} {mode} #{repeat}"
                    step(len(runs) + len(failures) + 1, total, what)
                    try:
                        result = run_case(bin_dir, case, mode, args.nice, disk)
                    except RunFailed as failure:
                        print(f"FAILED: {failure}", flush=True)
                        settle(data_file(case))
                        failures.append(
                            {k: case[k] for k in ("experiment", "label", "throttle")}
                            | {"mode": mode, "repeat": repeat, "error": str(failure)[:2000]}
                        )
                        continue
                    result.update(
                        {k: case[k] for k in ("experiment", "label", "throttle", "args")},
                        repeat=repeat,
                        paper_row=case["paper_row"],
                    )
                    runs.append(result)
                    print(
                        f"{what}: {result['wall_s']:.1f} s, utilization {result['utilization']:.2f}, "
                        f"disk w {result['disk_write_mib_s']:.0f} r {result['disk_read_mib_s']:.0f} MiB/s, "
                        f"sync after {result['sync_after_s']:.1f} s",
                        flush=True,
                    )
    finally:
        set_throttle(cgroup, device, 0)
        for program in ("fwi", "heat"):
            Path(args.dir, f"strata-umt-{program}-paper.dat").unlink(missing_ok=True)
            Path(args.dir, f"strata-umt-{program}-cal.dat").unlink(missing_ok=True)  # calibrate()'s

    document = {
        "suite": "umt-paper",
        "command": os.environ.get("STRATA_BENCH_COMMAND", "bench/umt/run --paper"),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "duration_s": time.time() - started,
        "estimated_duration_s": estimate,
        "machine": {
            "cores": cores,
            "kernel": platform.release(),
            "cpu": cpu_model(),
            "memory_gib": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / (1 << 30),
            "disk": disk,
            "disk_device": device,
            "data_dir": args.dir,
        },
        "loadavg": {"start": list(load_at_start), "end": list(os.getloadavg())},
        "settings": {
            "repeats": repeats,
            "modes": modes,
            "baseline_mode": "off",
            "umt_mode": VERDICT_MODE,
            "nice": args.nice,
            "quick": args.quick,
            "cpu_shares": int(os.environ.get("STRATA_UMT_CPU_SHARES", "1024")),
            "rt_runtime_us": int(os.environ.get("STRATA_UMT_RT_RUNTIME_US", "0")),
            "run_timeout_s": RUN_TIMEOUT_S,
        },
        "paper": {
            "cores": PAPER_CORES,
            "device_mib_s": OPTANE_MIB_S,
            "fwi": FWI_PAPER,
            "heat": HEAT_PAPER,
            "derived": paper_derived(),
        },
        "scale": scale,
        "calibration": cal,
        "cases": cases,
        "runs": runs,
        "failures": failures,
        "summary": paper_medians(summarize(runs), runs),
        # No pass/fail targets: the report sets strata's figures beside the paper's (issue 30).
        "targets": [],
    }
    Path(args.json).write_text(json.dumps(document, indent=1) + "\n")
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
