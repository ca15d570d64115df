# SPDX-License-Identifier: MIT
"""Turns bench/umt's results.json into results.md and the plots (PNG)."""

import argparse
import json
import statistics
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from judge import (  # noqa: E402
    COLORS,
    PAPER_CASES,
    bound_of,
    comparison_mode,
    fmt,
    judged_rows,
    modes_in,
    over_the_round,
    row,
    shared_rows,
    target_rows,
    targets,
)
from report_plots import save_png  # noqa: E402


def plot_share(summary, out):
    rows = sorted(
        (r for r in summary if r["experiment"] == "synthetic-pipe"), key=lambda r: r["blocking_share"]
    )
    if not rows:
        return None
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for mode in modes_in(summary):
        mine = [r for r in rows if r["mode"] == mode]
        shares = [r["blocking_share"] for r in mine]
        if mode != "off":
            left.plot(shares, [r["speedup_vs_off"] for r in mine], "o-", color=COLORS.get(mode), label=mode)
        right.plot(
            shares, [100 * r["utilization_median"] for r in mine], "o-", color=COLORS.get(mode), label=mode
        )
    left.axhline(1.0, color="#888888", lw=0.8)
    left.set(
        xlabel="blocking share of a task",
        ylabel="speedup vs off (median wall time)",
        title="Synthetic: speedup",
    )
    right.set(
        xlabel="blocking share of a task", ylabel="CPU utilization, % of 2 cores", title="Synthetic: CPU use"
    )
    right.set_ylim(0, 105)
    for ax in (left, right):
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    path = out / "synthetic_share.png"
    save_png(fig, path, dpi=110)
    plt.close(fig)
    return path.name


def io_cases(summary):
    cases = []
    for r in summary:
        if r["mode"] == "off" and r["experiment"] != "synthetic-pipe":
            cases.append((r["experiment"], r["label"], r["throttle"]))
    return cases


def plot_bars(summary, out, key, ylabel, title, name, scale=1.0, reference=None):
    cases = io_cases(summary)
    if not cases:
        return None
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(cases)), 4.2))
    width = 0.8 / 4
    modes = [m for m in modes_in(summary) if key != "speedup_vs_off" or m != "off"]
    for index, mode in enumerate(modes):
        values = []
        for experiment, label, throttle in cases:
            r = row(summary, experiment, throttle, mode, label)
            values.append(scale * r[key] if r and r[key] is not None else 0)
        xs = [i + (index - (len(modes) - 1) / 2) * width for i in range(len(cases))]
        ax.bar(xs, values, width, color=COLORS.get(mode), label=mode)
    if reference is not None:
        ax.axhline(reference, color="#d62728", lw=1, ls="--")
    ax.set_xticks(range(len(cases)))
    ax.set_xticklabels(
        [f"{e}\n{lab.split(',')[1].strip() if 'io-freq' in lab else ''}\n{t}" for e, lab, t in cases],
        fontsize=8,
    )
    ax.set(ylabel=ylabel, title=title)
    ax.grid(axis="y", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path = out / name
    save_png(fig, path, dpi=110)
    plt.close(fig)
    return path.name


def percent_cell(share):
    """A share as a table cell in per cent, '–' when not recorded."""
    return "–" if share is None else f"{100 * share:.1f}%"


def run_task_utilization(run):
    """A run's task utilization: its tasks' whole bodies, or, for runs before the eighth round that did not
    record them, their compute kernels."""
    return run.get("task_body_utilization", run["task_utilization"])


def run_task_cpu_s(run):
    """A run's tasks' CPU time on the same basis as run_task_utilization."""
    return run.get("task_body_cpu_s", run["task_cpu_s"])


def round_section(doc):
    """The default targets over the round this run ends (results.json "round"): each run's figure and the
    verdict, met only when every run met it."""
    if not doc.get("round"):
        return []
    earlier = doc["round"]["earlier"]
    lines = [
        "",
        f"This run ends a round of {len(earlier) + 1} runs of the same command; the default targets are judged "
        "on all of them, met only where each run met it (results.json's `targets`):",
        "",
        "| target | "
        + " | ".join(f"run {i + 1} ({e['ref']})" for i, e in enumerate(earlier))
        + f" | run {len(earlier) + 1} (this one) | met in each |",
        "|---|" + "---|" * (len(earlier) + 2),
    ]
    own_rows = judged_rows(doc, doc.get("verdict_mode", "ebpf+idle"))
    for own, judged in zip(own_rows, over_the_round(doc, own_rows), strict=True):
        before = [e["targets"].get(own["id"]) for e in earlier]
        if not all(before):
            continue
        cells = [f"{b['measured']}{'' if b['met'] else ' (missed)'}" for b in before]
        cells.append(f"{own['measured']}{'' if own['met'] else ' (missed)'}")
        lines.append(f"| {own['id']} | " + " | ".join(cells) + f" | {'yes' if judged['met'] else '**no**'} |")
    return lines


def mode_comparison(summary):
    """The targets' figures for every monitored mode of the run, side by side (only the verdict mode is judged)."""
    modes = [m for m in modes_in(summary) if m != "off"]
    if len(modes) < 2:
        return []
    figures = {m: targets(summary, m, None) for m in modes}
    names = ["highest oversubscription", "compute-only overhead", "lowest speedup / bound"]
    names += [f"speedup, {experiment}" for experiment, _ in PAPER_CASES]
    names += ["task utilization (median of the I/O cases)"]
    lines = [
        "",
        "The same figures for every monitored mode of this run (not judged; the verdict is on the mode named above):",
        "",
        "| figure | " + " | ".join(modes) + " |",
        "|---|" + "---|" * len(modes),
    ]
    for index, name in enumerate(names):
        cells = []
        for m in modes:
            checks = figures[m]
            cells.append(f"{fmt(checks[index][1])}{checks[index][3]}" if index < len(checks) else "–")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def standby_table(summary):
    """What idle+standby did in each configuration (none: no lines)."""
    rows = [r for r in summary if r["mode"].endswith("+standby")]
    if not rows:
        return []
    lines = [
        "",
        "## What the standby worker did (idle+standby)",
        "",
        "Per run, medians over the repeats: *takeovers* are the times a core's standby worker saw the core's "
        "last ready worker block and took a task as its cover, without the monitor's thread; *wakes* the "
        "parked workers woken by the monitor's thread or the leader's scan for an empty core (where no worker "
        "stood by: before the first one did, or when the standby worker had just taken over and blocked too), "
        "beside the same figure of `ebpf+idle` in the same run.",
        "",
        "| experiment | configuration | throttle | takeovers | wakes | wakes, ebpf+idle |",
        "|---|---|---|---|---|---|",
    ]
    by_key = {(r["experiment"], r["label"], r["throttle"], r["mode"]): r for r in summary}
    for r in rows:
        idle = by_key.get((r["experiment"], r["label"], r["throttle"], "ebpf+idle"))
        idle_wakes = "–" if idle is None else f"{idle.get('wakes_median', 0):.0f}"
        lines.append(
            f"| {r['experiment']} | {r['label']} | {r['throttle']} | "
            f"{r.get('standby_takeovers_median', 0):.0f} | {r.get('wakes_median', 0):.0f} | {idle_wakes} |"
        )
    return lines


def suspension_table(summary):
    """What idle+suspend did in each configuration of the modes that suspend (none: no lines)."""
    rows = [r for r in summary if r["mode"].endswith("+suspend")]
    if not rows:
        return []
    lines = [
        "",
        "## What the suspension did (idle+suspend)",
        "",
        "Per run, medians over the repeats: *requests* are the signals the monitor's thread sent to a cover on "
        "the wakeup event of a worker it covered for; *suspended* the covers that took it inside a task's code and "
        "waited; *declined* those that found the cover inside the runtime (it surrenders at its next scheduling "
        "point instead); a request released before its signal arrived is neither. *handed back*: requests or suspensions ended "
        "because another worker of the core (the woken one) reached a scheduling point. *bound* is the number of "
        "suspensions ended by the 100 ms bound instead of a release, summed over the repeats. *time suspended* is "
        "the covers' suspended time as a share of wall time × cores; *longest* the longest single suspension of "
        "any repeat. *event latency* is from the BPF wakeup of the covered worker to the monitor's thread handling "
        "its event (mean of a run, median over the repeats), before the signal is sent; *signal latency* is from "
        "the signal sent to the handler running (mean of a run, median over the repeats; and the longest of any "
        "repeat).",
        "",
        "| experiment | configuration | throttle | mode | wakeup events | event latency mean | requests | suspended | declined | handed back | bound | time suspended | longest | signal latency mean | signal latency max |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['experiment']} | {r['label']} | {r['throttle']} | {r['mode']} | "
            f"{r.get('woken_events_median', 0):.0f} | {1e6 * r.get('woken_event_latency_mean_s_median', 0):.0f} µs | "
            f"{r.get('suspend_requests_median', 0):.0f} | {r.get('suspends_median', 0):.0f} | "
            f"{r.get('suspend_declined_median', 0):.0f} | {r.get('suspend_handbacks_median', 0):.0f} | "
            f"{r.get('suspend_timeouts_total', 0):.0f} | "
            f"{100 * r.get('suspended_share_median', 0):.2f}% | {1e3 * r.get('suspended_max_s', 0):.1f} ms | "
            f"{1e6 * r.get('suspend_latency_mean_s_median', 0):.0f} µs | "
            f"{1e6 * r.get('suspend_latency_max_s', 0):.0f} µs |"
        )
    return lines


def time_breakdown(runs, mode):
    """Where wall time x cores went in `mode`'s runs, per configuration (medians over the repeats)."""
    groups = {}
    for r in runs:
        if r.get("mode") != mode or "wall_s" not in r:
            continue
        if r["experiment"] == "synthetic-pipe" and r.get("blocking_share") != 0.75:
            continue
        groups.setdefault((r["experiment"], r["label"], r["throttle"]), []).append(r)
    if not groups:
        return []
    # Runs that record their threads' CPU time (bench/umt/umt_common.hpp, thread_cpu_s) split "outside tasks".
    threads = any("thread_cpu_s" in r for members in groups.values() for r in members)
    lines = [
        "",
        f"## Where the time goes ({mode})",
        "",
        "Shares of wall time × cores, medians over the repeats: the tasks' own CPU time (*task util.*: their "
        "whole bodies since the eighth round, their compute kernels before); the "
        "process's CPU time outside task code (*CPU util.* − *task util.*: the runtime's park, wake and scheduling "
        "points, the monitor's and the leader's threads, the benchmark's own device thread, and the kernel's "
        "context switches charged to them); and the time in which the core had no ready worker (the monitor's "
        "*no_ready*), also per block the monitor counted where a run has 100 blocks or more. The last two "
        "overlap where the monitor's or the device's thread runs on a core without a ready worker. Every I/O "
        "case, and the pipe sweep at share 0.75 (the lowest speedup-to-bound).",
    ]
    header = "| experiment | configuration | throttle | task util. | outside tasks | no ready worker | no ready worker per block |"
    rule = "|---|---|---|---|---|---|---|"
    if threads:
        lines[-1] += (
            " Where the runs record each thread's CPU time (/proc/self/task/*/schedstat over the measured "
            "window), *outside tasks* is split: the workers' time outside task code (the runtime, and the "
            "kernel's switches and system calls on their behalf), the monitor's thread, the leader, and the "
            "benchmark's own device thread (the emulated device's work, not strata's)."
        )
        header += " workers outside tasks | monitor's thread | leader | device thread |"
        rule += "---|---|---|---|"
    lines += ["", header, rule]
    for (experiment, label, throttle), members in groups.items():
        task = statistics.median(run_task_utilization(r) for r in members)
        outside = statistics.median(r["utilization"] - run_task_utilization(r) for r in members)
        empty = statistics.median(r["no_ready_s"] / (r["wall_s"] * r["cores"]) for r in members)
        counted = [1e6 * r["no_ready_s"] / r["blocks"] for r in members if r["blocks"] >= 100]
        per_block = f"{statistics.median(counted):.0f} µs" if counted else "–"
        row = (
            f"| {experiment} | {label} | {throttle} | {100 * task:.1f}% | {100 * outside:.1f}% | "
            f"{100 * empty:.1f}% | {per_block} |"
        )
        if threads:
            recorded = [r for r in members if "thread_cpu_s" in r]

            def share(of, recorded=recorded):
                if not recorded:
                    return "–"
                return f"{100 * statistics.median(of(r) / (r['wall_s'] * r['cores']) for r in recorded):.1f}%"

            row += (
                f" {share(lambda r: r['thread_cpu_s']['worker'] - run_task_cpu_s(r))} |"
                f" {share(lambda r: r['thread_cpu_s']['monitor'])} |"
                f" {share(lambda r: r['thread_cpu_s']['leader'])} |"
                f" {share(lambda r: r['thread_cpu_s']['device'])} |"
            )
        lines.append(row)
    return lines


def in_tree(command):
    """A recorded command whose program is in a build tree (/.../build/default/bin/x), as run from the top of the
    source tree (build/default/bin/x), so that a reader of a clone can run it."""
    program, _, args = command.partition(" ")
    at = program.rfind("/build/")
    return (program[at + 1 :] if at >= 0 else program) + (f" {args}" if args else "")


def markdown(doc, plots, rows):
    m = doc["machine"]
    s = doc["settings"]
    summary = doc["summary"]
    lines = [
        "# UMT benchmarks: cores that stay busy when tasks block",
        "",
        f"Command: `{doc['command']}` — {doc['date']}, {doc['duration_s']:.0f} s.",
        "",
        f"Machine: **{m['cores']} cores** ({m['cpu']}), kernel {m['kernel']}, data on `{m['data_dir']}` "
        f"(disk {m['disk']}, {m['disk_device']}). The machine is **shared and noisy**: other sessions compile "
        "on the same 2 cores during the runs (column *other load*: share of the machine's CPU used by other "
        f"processes during a run). The benchmark runs in a cpu cgroup with cpu.shares={s.get('cpu_shares', 1024)} "
        "(the other sessions' work keeps running but yields most of the cores) to keep that noise down"
        + (
            f", with a real-time budget (cpu.rt_runtime_us={s['rt_runtime_us']}) so that the monitor's thread "
            "can take SCHED_FIFO inside it (docs/monitor.md); "
            if s.get("rt_runtime_us")
            else "; "
        )
        + f"every configuration is repeated {s['repeats']}× with the modes interleaved (the compute-only case, "
        f"share 0.00, {s.get('overhead_repeats', s['repeats'])}×), and medians are reported.",
        "",
        "Slow storage is emulated with **cgroup v1 blkio throttling**: `bench/umt/run` creates a blkio cgroup, "
        "moves itself into it, and sets `blkio.throttle.read_bps_device` and `write_bps_device` on the data disk "
        "to 250 MiB/s (SATA-like) or 2 GiB/s; the cgroup is removed on exit (trap), also on failure. This VM's "
        "disk does about 1 GB/s with O_DIRECT, so the 2 GiB/s throttle does not bind: those rows measure the "
        "raw disk. All I/O in the I/O cases is O_DIRECT (the throttle cannot see page-cache write-back).",
        "",
        "Modes, side by side in the same run: `off` (no monitor: a blocked task's core idles), `ebpf+normal` "
        "(the BPF monitor; a worker woken to cover for a blocked one runs at the normal policy, as before issue "
        "15), `ebpf+idle` (the same, but the cover runs at SCHED_IDLE while the blocked worker is away, so the "
        "kernel preempts it when that worker wakes; STRATA_COVER_PRIORITY=idle), `ebpf+surrender` (the cover "
        "runs normal; the monitor's wakeup event for the worker it covers for sets it to SCHED_IDLE at nice 19, "
        "which makes the kernel reschedule its CPU at once; STRATA_COVER_PRIORITY=surrender), "
        "`ebpf+idle+surrender` (both), `ebpf+idle+suspend` (SCHED_IDLE covers, and on the wakeup event the "
        "cover is suspended mid-task by a signal until the woken worker blocks again or runs out of work; "
        "STRATA_COVER_PRIORITY=idle+suspend), `ebpf+idle+standby` (SCHED_IDLE covers, and a worker that would park "
        "while another of its core is active stands by instead, runnable at SCHED_IDLE and out of the monitor's "
        "count, and takes over when the core's last ready worker blocks; STRATA_COVER_PRIORITY=idle+standby), and "
        "when asked `ebpf+slice`, `proc`. Speedup = median wall time of `off` / median wall time of the mode. CPU utilization = process CPU time / (wall time × cores); "
        "task utilization = the tasks' own CPU time, measured inside each task, / (wall time × cores): the "
        "utilization target is judged on the latter, because process CPU time includes the runtime's and the "
        "monitor's own work. Since the eighth round a task's own CPU time is its whole body up to the event that "
        "hands its result on (compute, copies, checksums, the CPU side of its system calls, not the runtime's "
        "scheduling point); *kernel util.* is the compute kernels alone, the definition of the rounds before, "
        "and the bound and utilization targets give their figure on it beside the judged one.",
        "",
        "## Targets",
        "",
        f"Judged on **{doc.get('verdict_mode', 'ebpf+idle')}** (named before the run; the figure of "
        f"`{comparison_mode(doc.get('verdict_mode', 'ebpf+idle'))}`, measured beside it, is given in the first row). "
        "*I/O cases*: every experiment except the synthetic pipe sweep.",
        "",
        "| target | measured | met |",
        "|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['target']} | {r['measured']} | {'yes' if r['met'] else '**no**'} |")
    lines += round_section(doc)
    lines += mode_comparison(summary)
    load = doc.get("loadavg")
    lines += [
        "",
        "The compute-only rows compare whole runs, and the runtime schedules differently without a monitor "
        "(no leader scan, no wake-ups), so a negative overhead means the monitored run was faster, not that the "
        "monitor costs nothing; its own cost is measured directly in *The BPF programs' own cost* below. "
        "The bound 1/(off's task utilization) assumes the blocking overlaps perfectly; on a bandwidth-bound "
        "device (the 250 MiB/s rows) the device itself bounds lower (see README.md).",
    ]
    if load:
        lines += [
            "",
            f"Load average of the machine (1, 5, 15 min): {', '.join(f'{x:.2f}' for x in load['start'])} at the "
            f"start, {', '.join(f'{x:.2f}' for x in load['end'])} at the end (2 cores; column *load* gives the "
            "1-minute figure as each configuration's runs started, median).",
        ]
    lines += ["", "## Results", ""]
    lines += [
        "| experiment | configuration | throttle | mode | wall s (median, min–max) | speedup vs off | bound | CPU util. | task util. | kernel util. | oversubscribed | of which waiting | wakes | covers | other load | load | checksums = off |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in summary:
        lines.append(
            f"| {r['experiment']} | {r['label']} | {r['throttle']} | {r['mode']} | "
            f"{r['wall_s_median']:.3f} ({r['wall_s_min']:.3f}–{r['wall_s_max']:.3f}) | {fmt(r['speedup_vs_off'])}× | "
            f"{fmt(bound_of(summary, r))}× | "
            f"{100 * r['utilization_median']:.0f}% | {100 * r['task_utilization_median']:.1f}% | "
            f"{percent_cell(r.get('kernel_utilization_median'))} | "
            f"{100 * r['oversubscribed_share_median']:.1f}% | "
            f"{100 * r.get('oversubscribed_wait_share_median', 0):.1f}% | {r['wakes_median']:.0f} | {r.get('covers_median', 0):.0f} | "
            f"{100 * r['other_cpu_share_median']:.0f}% | {r.get('loadavg_1m_median', 0):.2f} | "
            f"{'yes' if r.get('checksums_match_off', True) else '**no**'} |"
        )
    lines += suspension_table(summary)
    lines += standby_table(summary)
    lines += time_breakdown(doc.get("runs", []), doc.get("verdict_mode", "ebpf+idle"))
    cost = doc.get("bpf_cost")
    if cost and "ns_per_run" in cost:
        lines += [
            "",
            "## The BPF programs' own cost",
            "",
            f"`{in_tree(cost['command'])}`{' (measured separately from this run)' if cost.get('measured_separately') else ''}: "
            f"two registered workers on one CPU ping-pong over pipes for {cost['seconds']:.1f} s "
            f"({cost['round_trips']} round trips, {cost['machine_context_switches']} context switches on the machine). "
            f"The monitor's programs ran {cost['program_runs']} times (they run on every switch and wakeup of the "
            f"machine, not only the workers') for **{cost['ns_per_run']:.0f} ns per run** (kernel BPF run-time "
            f"statistics), {100 * cost['cpu_share_of_one_core']:.1f}% of one core at this extreme switch rate; at "
            "10,000 switches and wakeups per second that is about 0.2% of a core.",
        ]
    cal = doc["calibration"]
    lines += [
        "",
        f"Calibration (one CPU, monitor off, best of 3): {cal['iters_per_us']:.0f} kernel iterations/µs; FWI "
        f"{cal['fwi_sweep_us_per_mib']:.0f} µs per sweep of a 1 MiB slice; heat "
        f"{cal['heat_sweep_us_per_256x256']:.0f} µs per sweep of a 256×256 block.",
        "",
        "*task util.* counts only the tasks' own CPU time (thread CPU time inside the task bodies), so it excludes "
        "the runtime, the monitor, and the kernel's I/O work done outside the tasks' threads (completion "
        "interrupts, write-back). *oversubscribed*: time with more than one ready worker on a core, "
        "summed over cores, as a share of wall time × cores (from the monitor's statistics; 0 for `off`). "
        "*of which waiting*: the part of it during which a worker woken onto the oversubscribed core had not "
        "yet run since its wakeup (the BPF monitor's oversubscribed_wait; the rest is the woken worker running "
        "to its next scheduling point, or the cover running while the woken worker waits after being "
        "preempted). "
        "FWI and heat check their results: the checksum of the final volume/grid must equal the `off` run's, "
        "and every FWI snapshot read back must match the one written.",
        "",
    ]
    failures = doc.get("failures", [])
    lines += [f"Failed or hung runs (not in the medians): {len(failures)}.", ""]
    for failure in failures:
        first = failure["error"].splitlines()[0] if failure["error"] else ""
        lines.append(
            f"- {failure['experiment']} {failure['label']} {failure['throttle']} {failure['mode']} #{failure['repeat']}: `{first[:300]}`"
        )
    if failures:
        lines.append("")
    for p in plots:
        if p:
            lines.append(f"![{p}]({p})")
            lines.append("")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("results")
    parser.add_argument("--out-dir", required=True)
    args = parser.parse_args()
    doc = json.loads(Path(args.results).read_text())
    out = Path(args.out_dir)
    summary = doc["summary"]
    plots = [
        plot_share(summary, out),
        plot_bars(
            summary,
            out,
            "speedup_vs_off",
            "speedup vs off",
            "Speedup with the monitor (I/O cases)",
            "speedup.png",
            reference=1.5,
        ),
        plot_bars(
            summary,
            out,
            "task_utilization_median",
            "task utilization, %",
            "Tasks' own utilization (I/O cases; the target is 95 %)",
            "utilization.png",
            scale=100,
            reference=95,
        ),
    ]
    rows = target_rows(doc)
    (out / "results.md").write_text(markdown(doc, plots, rows))
    print(f"wrote {out / 'results.md'}")
    # The same targets into results.json in the shape every suite shares (bench/target_rows.py), where
    # strata.bench and scripts/bench-summary read them; derived from the document's own data, so writing them
    # back changes no measurement.
    doc["targets"] = shared_rows(doc)
    Path(args.results).write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote the targets into {args.results}")


if __name__ == "__main__":
    main()
