# SPDX-License-Identifier: MIT
"""Writes results.md and paper_speedup.png from bench/umt/paper.py's results.json: the paper's figures beside strata's.

paper_report.py RESULTS_JSON --out-dir DIR

Everything is derived from results.json (the paper's figures are recorded there too); the side-by-side
rows are also written back into it as "comparison", which changes no measurement.
"""

import argparse
import json
from pathlib import Path

MIB = 1 << 20
VERSIONS = (("baseline", "Baseline", "off"), ("umt", "UMT", None))  # None: the run's umt_mode
# The paper's oversubscription (§IV-D2, §IV-E2): UMT's share of the run, not per table row.
PAPER_OVERSUBSCRIPTION = {"fwi": "≈ 2.25 %", "heat": "2.4–3.2 %"}


def pct(value, digits=1):
    return "—" if value is None else f"{100 * value:.{digits}f} %"


def rows_of(doc):
    """One row per case and version: the paper's figures (None where it has none) and strata's medians."""
    umt_mode = doc["settings"]["umt_mode"]
    summary = {(r["experiment"], r["label"], r["throttle"], r["mode"]): r for r in doc["summary"]}
    out = []
    for case in doc["cases"]:
        paper_table = doc["paper"][case["experiment"]]
        paper_row = paper_table["rows"].get(case["paper_row"]) if case["paper_row"] else None
        for key, version, mode in VERSIONS:
            mode = mode or umt_mode
            ours = summary.get((case["experiment"], case["label"], case["throttle"], mode))
            mine = paper_row[key] if paper_row else {}
            out.append(
                {
                    "experiment": case["experiment"],
                    "case": case["label"],
                    "throttle": case["throttle"],
                    "paper_table": paper_table["table"] if paper_row else None,
                    "paper_row": case["paper_row"],
                    "version": version,
                    "mode": mode,
                    "paper_speedup": paper_row["speedup"] if paper_row and key == "umt" else None,
                    "speedup": ours["speedup_vs_off"] - 1
                    if ours and key == "umt" and ours.get("speedup_vs_off")
                    else None,
                    "fom_unit": paper_table["fom_unit"],
                    "paper_fom": mine.get("fom"),
                    "fom": ours["fom_median"] if ours else None,
                    "paper_cpu": mine["cpu"] / 100 if "cpu" in mine else None,
                    "cpu": ours["utilization_median"] if ours else None,
                    "task_cpu": ours["task_utilization_median"] if ours else None,
                    **io_figures(case, ours, mine, doc["paper"]["device_mib_s"]),
                    "paper_oversubscribed": PAPER_OVERSUBSCRIPTION[case["experiment"]]
                    if key == "umt" and paper_row
                    else None,
                    "oversubscribed": ours["oversubscribed_share_median"] if ours and key == "umt" else None,
                    "repeats": ours["repeats"] if ours else 0,
                }
            )
    return out


def io_figures(case, ours, mine, device):
    """Write and read rates: the paper's and its share of its Optane's; strata's (the disk's traffic while the
    program ran) and its share of the throttle's rate. No share where the device is the raw disk (buffered
    write-back escapes the throttle; the unthrottled case has none); heat reads nothing."""
    out = {}
    for d in ("write", "read"):
        out[f"paper_{d}_mib_s"] = mine.get(d)
        out[f"paper_{d}_share"] = mine[d] / device[d] if d in mine else None
        measured = (
            ours[f"disk_{d}_mib_s_median"] if ours and (d == "write" or case["experiment"] == "fwi") else None
        )
        out[f"{d}_mib_s"] = measured
        throttled = case[f"{d}_bps"] and case.get("direct", True)
        out[f"{d}_share"] = (
            measured / (case[f"{d}_bps"] / MIB) if measured is not None and throttled else None
        )
    return out


def cell(value, fmt="{:.2f}", missing="—"):
    return missing if value is None else fmt.format(value)


def rate(value, share, fmt):
    """A rate and, in parentheses, its share of the device."""
    return cell(value, fmt) + (f" ({pct(share)})" if share is not None else "")


def side_by_side(rows):
    lines = [
        "| case | version | paper speedup | strata speedup | paper FOM | strata FOM | paper CPU | strata CPU "
        "(tasks) | paper write MiB/s (of device) | strata write MiB/s (of throttle) | paper read MiB/s "
        "(of device) | strata read MiB/s (of throttle) | paper oversubscribed | strata oversubscribed |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        umt = r["version"] == "UMT"
        lines.append(
            f"| {r['experiment']}: {r['case']}, {r['throttle']} | {r['version']} ({r['mode']}) "
            f"| {pct(r['paper_speedup'], 0) if umt and r['paper_row'] else ''} | {pct(r['speedup']) if umt else ''} "
            f"| {cell(r['paper_fom'], '{:.0f}')} | {cell(r['fom'], '{:.0f}')} {r['fom_unit']} "
            f"| {pct(r['paper_cpu'])} | {pct(r['cpu'])} ({pct(r['task_cpu'])}) "
            f"| {rate(r['paper_write_mib_s'], r['paper_write_share'], '{:.2f}')} "
            f"| {rate(r['write_mib_s'], r['write_share'], '{:.0f}')} "
            f"| {rate(r['paper_read_mib_s'], r['paper_read_share'], '{:.2f}')} "
            f"| {rate(r['read_mib_s'], r['read_share'], '{:.0f}')} "
            f"| {r['paper_oversubscribed'] or ''} | {pct(r['oversubscribed'], 2) if umt else ''} |"
        )
    return lines


def scale_table(doc):
    paper, scale, derived = doc["paper"], doc["scale"], doc["paper"]["derived"]
    f, h = scale["fwi"], scale["heat"]
    fwi = paper["fwi"]
    z, x, y = fwi["volume_zxy"]
    slice_mib = f["slice_bytes"] / MIB
    gib = 1 << 30
    return [
        "| | paper | strata here | scale |",
        "|---|---|---|---|",
        f"| cores | {paper['cores']} | {scale['cores']} | {scale['cores']}/{paper['cores']} |",
        f"| FWI volume | {z}×{x}×{y}: {fwi['slices']} Y-slices of {fwi['slice_kib']} KiB "
        f"({fwi['slices'] * slice_mib:.0f} MiB) | {f['slices']} slices of {fwi['slice_kib']} KiB "
        f"({f['slices'] * slice_mib:.0f} MiB) | {f['volume_factor']:.3f} (the paper's slices per core) |",
        f"| FWI steps | {fwi['steps']} forward + {fwi['steps']} backward, io-freq 1 and 3 "
        f"| {f['steps']} + {f['steps']}, io-freq 1 and 3 | {f['steps'] / fwi['steps']:.2f} |",
        f"| FWI snapshots written per run, io-freq 1 | {fwi['slices'] * fwi['steps'] * slice_mib / 1024:.0f} GiB "
        f"| {f['data_file_bytes'] / gib:.1f} GiB (and read back) | |",
        f"| FWI compute per task | {1e3 * derived['fwi_task_cpu_s']:.1f} ms (derived, below) "
        f"| {1e3 * f['task_cpu_s']:.1f} ms ({f['sweeps']} sweeps) | k = {f['time_scale']:.2f} faster |",
        f"| FWI device | Optane: {paper['device_mib_s']['write']} MiB/s write, "
        f"{paper['device_mib_s']['read']} read | blkio throttle: {f['write_bps'] / MIB:.0f} MiB/s write, "
        f"{f['read_bps'] / MIB:.0f} read | × {scale['cores']}/{paper['cores']} × k |",
        f"| heat grid | not given | {h['grid']}² cells of {h['cell_bytes']} bytes ({h['grid_bytes'] / gib:.1f} GiB), "
        f"{h['grid'] // h['block']}×{h['grid'] // h['block']} blocks of {h['block']}² | chosen for time |",
        f"| heat iterations | not given (≈ 780 GiB written per node) | {h['iters']}, a checkpoint every "
        f"{h['ckpt_every']} ({h['checkpoints']} checkpoints, {h['checkpoints'] * h['grid_bytes'] / gib:.0f} GiB) "
        "| issue 30 |",
        f"| heat compute per cell and iteration | {derived['heat_cell_cpu_ns']:.2f} ns (derived, below) "
        f"| {h['cell_cpu_ns']:.2f} ns ({h['sweeps']} sweep) | k = {h['time_scale']:.2f} faster |",
        f"| heat cell | {derived['heat_cell_bytes']} bytes (inferred, below) | {h['cell_bytes']} bytes "
        f"| × {h['byte_factor']:.0f} bytes per cell |",
        f"| heat device | Optane: {paper['device_mib_s']['write']} MiB/s write "
        f"| blkio throttle: {h['write_bps'] / MIB:.0f} MiB/s write | × {scale['cores']}/{paper['cores']} × k "
        f"× {h['byte_factor']:.0f} |",
    ]


def plot(rows, path):
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    umt = [r for r in rows if r["version"] == "UMT"]
    labels = [f"{r['experiment']} {r['paper_row'] or 'O_DIRECT, raw disk'}" for r in umt]
    fig, ax = plt.subplots(figsize=(8, 3.2))
    xs = range(len(umt))
    ax.bar([x - 0.2 for x in xs], [100 * (r["paper_speedup"] or 0) for r in umt], 0.4, label="paper (UMT)")
    ax.bar([x + 0.2 for x in xs], [100 * (r["speedup"] or 0) for r in umt], 0.4, label="strata (ebpf)")
    ax.set_xticks(list(xs), labels, fontsize=8)
    ax.set_ylabel("speedup over Baseline, %")
    ax.set_title(
        "Speedup over Baseline at the paper's scale (no paper bar: the paper has no such row)", fontsize=9
    )
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def markdown(doc, rows, plotted):
    m, s, derived = doc["machine"], doc["settings"], doc["paper"]["derived"]
    fwi_base = doc["paper"]["fwi"]["rows"]["iof 1"]["baseline"]
    heat_base = doc["paper"]["heat"]["rows"]["non-buffered"]["baseline"]
    lines = [
        "# UMT at the paper's own scale (paper 002 §IV, one node)",
        "",
        f"Command: `{doc['command']}` — {doc['date']}, {doc['duration_s'] / 60:.0f} min "
        f"(estimated before the runs from the calibration: {doc['estimated_duration_s'] / 60:.0f} min of runs)"
        + (" — **a --quick smoke run, not the paper's sizes**" if s["quick"] else "")
        + ".",
        "",
        f"Machine: {m['cores']} cores ({m['cpu']}), {m['memory_gib']:.0f} GiB, kernel {m['kernel']}, data on "
        f"`{m['data_dir']}` (disk {m['disk']}). Every case runs {s['repeats']}× per mode, the modes interleaved; "
        f"figures are medians. Baseline is `{s['baseline_mode']}` (no monitor), UMT is `{s['umt_mode']}` (the "
        "BPF monitor with the runtime's default cover priority), in bench/umt/run's cgroups (cpu.shares="
        f"{s['cpu_shares']}, an exclusive cpuset, a blkio group whose throttle is the device). "
        "Methodology of the suite: [../README.md](../README.md); this run: bench/umt/paper.py's docstring.",
        "",
        "## Scaled to this machine",
        "",
        "The paper's node has 28 cores and a 2 GB/s Optane; this machine has "
        f"{m['cores']} cores. What did not fit is scaled, by the factor in the last column:",
        "",
        *scale_table(doc),
        "",
        f"Derived from the paper's own figures (fixed before the run, bench/umt/paper.py): FWI's CPU time per task "
        f"is one step's time (208×208×408 cells / {fwi_base['fom']} kc/s = {derived['fwi_step_s']:.2f} s; "
        f"236 steps: {derived['fwi_run_s']:.0f} s, the paper's run) × 28 cores × {fwi_base['cpu']} % CPU / 408 "
        f"tasks per step, from Table I's Optane io-freq 1 Baseline. Heat's CPU time per cell and iteration is "
        f"28 cores × {heat_base['cpu']} % / {heat_base['fom']} M cells/s (Table III's non-buffered Baseline, "
        "its *cells/s* read as millions); with 4-byte cells, a checkpoint every 15 iterations writes 4/15 bytes "
        f"per cell and iteration, so its {heat_base['write']} MiB/s is "
        f"{derived['heat_write_rate_over_fom_if_4_bytes']:.2f}× its figure of merit (8-byte cells would give "
        "half): the paper's cells are taken to be 4 bytes. The device is the paper's per core, on this machine's "
        "cores, k times faster: a transfer then takes the same share of a task's compute as on the paper's node.",
        "",
        "## The paper's figures and strata's, side by side",
        "",
        "Speedup: the paper's as it prints it; strata's = median wall time of Baseline / median of UMT − 1. "
        "FOM in the paper's unit (FWI: thousands of the paper's 36-byte cells × steps per second; heat: millions "
        "of cells × iterations per second): the absolute figures are of a scaled run on 2 cores, not comparable "
        "to the paper's 28; speedup, CPU and the device's share are. CPU: the paper's node CPU; strata's process "
        "CPU time / (wall × cores), and in parentheses the tasks' own (README.md: with `ebpf` the standby "
        "worker's spinning counts as process CPU). Write and read: the disk's traffic while the program ran "
        "(/sys/block, the whole disk: other sessions' I/O included), and its share of the throttle's rate as the "
        "paper's is of the Optane's (none for buffered and unthrottled cases: their device is the raw disk).",
        "",
        *side_by_side(rows),
        "",
    ]
    if plotted:
        lines += ["![speedup, paper vs strata](paper_speedup.png)", ""]
    lines += [
        "## Table III: buffered vs O_DIRECT on this machine",
        "",
        "cgroup v1's blkio throttle does not see page-cache write-back (the kernel's flusher threads write in the "
        "root group's name), so the buffered case writes back at the raw disk's rate whatever the throttle, "
        "where the paper's two rows share one device. The third heat case, O_DIRECT without a throttle, is the "
        "same device as buffered write-back: buffered vs O_DIRECT like for like is that pair. *left dirty* is "
        "what a run left in the page cache at its exit (written back by a `sync` after it, *sync after*, not "
        "in its wall time): the write-back a buffered run defers.",
        "",
        "## Every configuration",
        "",
        "| case | throttle | mode (cover) | runs | wall s (median, min–max) | speedup | CPU | tasks' CPU "
        "| oversubscribed | disk write MiB/s | disk read MiB/s | left dirty MiB | sync after s | other load "
        "| checksums = off |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in doc["summary"]:
        speedup = r.get("speedup_vs_off")
        lines.append(
            f"| {r['experiment']}: {r['label']} | {r['throttle']} | {r['mode']} ({r.get('cover')}) "
            f"| {r['repeats']} | {r['wall_s_median']:.2f} ({r['wall_s_min']:.2f}–{r['wall_s_max']:.2f}) "
            f"| {cell(speedup, '{:.3f}×')} | {pct(r['utilization_median'])} | {pct(r['task_utilization_median'])} "
            f"| {pct(r['oversubscribed_share_median'], 2)} | {r['disk_write_mib_s_median']:.0f} "
            f"| {r['disk_read_mib_s_median']:.0f} | {r['dirty_at_exit_mib_median']:.0f} "
            f"| {r['sync_after_s_median']:.1f} | {pct(r['other_cpu_share_median'], 0)} "
            f"| {'yes' if r.get('checksums_match_off', True) else '**no**'} |"
        )
    cal = doc["calibration"]
    load = doc["loadavg"]
    lines += [
        "",
        f"Calibration (one CPU, monitor off, best of 3): FWI {cal['fwi_sweep_us_per_mib']:.0f} µs per sweep "
        f"of a 1 MiB slice; heat {cal['heat_sweep_us_per_256x256']:.0f} µs per sweep of a 256×256 block. "
        f"Load average (1, 5, 15 min): {', '.join(f'{x:.2f}' for x in load['start'])} at the start, "
        f"{', '.join(f'{x:.2f}' for x in load['end'])} at the end.",
        "",
        "Not run here: the paper's SATA rows (Tables I and IV: its 250 MiB/s SSD, heat with a checkpoint every "
        "100 iterations), its two-node columns (`bench/umt/run --nodes 2`, ../two-nodes/), and its Table II "
        "(perf profiles).",
        "",
    ]
    failures = doc["failures"]
    lines += [f"Failed or hung runs (not in the medians): {len(failures)}.", ""]
    for failure in failures:
        first = failure["error"].splitlines()[0] if failure["error"] else ""
        lines.append(
            f"- {failure['experiment']} {failure['label']} {failure['mode']} #{failure['repeat']}: `{first[:300]}`"
        )
    return "\n".join(lines).rstrip() + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("results")
    parser.add_argument("--out-dir", required=True)
    args = parser.parse_args()
    doc = json.loads(Path(args.results).read_text())
    out = Path(args.out_dir)
    rows = rows_of(doc)
    plotted = any(r["speedup"] is not None for r in rows)
    if plotted:
        plot(rows, out / "paper_speedup.png")
    (out / "results.md").write_text(markdown(doc, rows, plotted))
    print(f"wrote {out / 'results.md'}")
    doc["comparison"] = rows
    Path(args.results).write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
