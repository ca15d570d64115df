# SPDX-License-Identifier: MIT
"""The emulated nodes' part of the storage-windows report (issue 29): rma, dht and hacc at 4 and 8 ranks
over 2 emulated nodes (bench/storage-windows/run --nodes 2), summarized per rank count with report.py's
own summaries and judged on the one-node targets' thresholds, each rank count and IMB-RMA mode a row.

report.py calls summary(), targets() and markdown() with its summary functions (this module does not
import report.py, which imports it). Records: raw/nodes-rma.jsonl, nodes-dht.jsonl, nodes-hacc.jsonl.
"""

from __future__ import annotations

APPS = ("nodes-rma", "nodes-dht", "nodes-hacc")
# IMB-RMA's classes (sw-rma records "mode"): Fig. 5 is the single transfer, Fig. 6 the other two.
RMA_MODES = {
    "single": "single transfer (ranks 0 and 1, on different nodes)",
    "multiple": "multiple transfer (one_put_all, one_get_all)",
    "parallel": "parallel transfer (exchange_put, exchange_get)",
}
WHERE = "{n} ranks on 2 emulated nodes"


def summary(records, rma_summary, dht_summary, hacc_summary):
    """{ranks: {"rma": {mode: rma_summary}, "dht": dht_summary, "hacc": hacc_summary}} of the nodes' records,
    or None when there are none."""
    rma, dht, hacc = (records.get(app, []) for app in APPS)
    counts = sorted({r["ranks"] for r in rma + dht + hacc})
    if not counts:
        return None
    out = {}
    for n in counts:
        entry = {}
        for mode in RMA_MODES:
            rows = [r for r in rma if r["ranks"] == n and r.get("mode") == mode]
            if rows:
                entry.setdefault("rma", {})[mode] = rma_summary(rows)
        for key, rows, build in (("dht", dht, dht_summary), ("hacc", hacc, hacc_summary)):
            mine = [r for r in rows if r["ranks"] == n]
            if mine:
                entry[key] = build(mine)
                if key == "dht":
                    entry[key]["per_repeat"] = _dht_per_repeat(mine)
        out[str(n)] = entry
    return out


def _dht_per_repeat(rows):
    """Each variant's time over memory's in the same repeat, as {variant: [min, max]}: how far one repeat's
    ratio strays. memory-create is the same in-memory work through MPI_Win_create, so its spread is the
    measurement's own."""
    by_repeat = {}
    for r in rows:
        by_repeat.setdefault(r["repeat"], {})[r["variant"]] = r["seconds"]
    out = {}
    for variant in sorted({r["variant"] for r in rows} - {"memory"}):
        ratios = [t[variant] / t["memory"] for t in by_repeat.values() if variant in t and t.get("memory")]
        if ratios:
            out[variant] = [min(ratios), max(ratios)]
    return out


def _fmt(value, digits=2):
    return "—" if value is None else f"{value:.{digits}f}"


def targets(nodes, hacc_named):
    """The rows of every rank count, with the one-node targets' thresholds (report.py's targets()): RMA
    within 5 % of memory windows per IMB-RMA mode, DHT storage ≤ 1.15× and combined ≤ 1.05× memory, HACC
    checkpoint and restart ≤ 1.0× the better MPI-IO. Each row carries its id (shared_targets.py), its app
    (whose repeats report.py checks) and a short figure."""
    out = []
    for n, entry in (nodes or {}).items():
        where = WHERE.format(n=n)
        for mode, rma in entry.get("rma", {}).items():
            o = rma["overall"].get("memory", {})
            ratio = o.get("median_ratio")
            out.append(
                {
                    "id": f"rma-{mode}-{n}-ranks",
                    "app": "nodes-rma",
                    "target": f"{where}: RMA {mode} transfer storage within 5% of memory windows "
                    f"({'paper ≈ 1%, Fig. 5' if mode == 'single' else 'paper: no penalty, Fig. 6'})",
                    "measured": f"median ratio {_fmt(ratio, 3)} vs MPI_Win_allocate memory over {o.get('cells')} "
                    f"cells, {_fmt(rma['overall'].get('memory-create', {}).get('median_ratio'), 3)} vs "
                    "MPI_Win_create memory",
                    "short": f"{_fmt(ratio, 3)} (median of {o.get('cells')} cells)",
                    "met": abs(ratio - 1) <= 0.05 if ratio else None,
                }
            )
        dht = entry.get("dht")
        if dht:
            r = dht["ratio_to_memory"]
            for kind, limit, paper in (("storage", 1.15, "1.20× SSD"), ("combined", 1.05, "1.08×")):
                value = r.get(kind)
                out.append(
                    {
                        "id": f"dht-{kind}-{n}-ranks",
                        "app": "nodes-dht",
                        "target": f"{where}: DHT {kind}{' 0.5' if kind == 'combined' else ''} ≤ {limit}× memory "
                        f"time (paper {paper})",
                        "measured": f"median {_fmt(value)}×, best run {_fmt(dht['best_ratio_to_memory'].get(kind))}× "
                        f"(median vs MPI_Win_create memory: {_fmt(dht['ratio_to_memory_create'].get(kind))}×)"
                        + _spread(dht, kind),
                        "short": f"{_fmt(value)}× (median of {dht['runs'].get(kind)})",
                        "met": value <= limit if value else None,
                    }
                )
        hacc = entry.get("hacc")
        if hacc and hacc_named in hacc["table"]:
            row = hacc["table"][hacc_named]
            for phase, what in (("checkpoint", "the better of independent and collective MPI-IO"),
                                ("restart", "MPI-IO's read time (cold cache)")):  # fmt: skip
                value = row[f"{phase}_to_best_mpiio"]
                best = hacc[f"best_mpiio_{phase}_seconds"]
                out.append(
                    {
                        "id": f"hacc-{phase}-{n}-ranks",
                        "app": "nodes-hacc",
                        "target": f"{where}: HACC {phase} through a storage window ≤ 1.0× {what} "
                        f"({'write_once' if phase == 'checkpoint' else 'read_once'})",
                        "measured": f"{_fmt(value)}× ({_fmt(row[f'{phase}_seconds'], 3)} s vs {_fmt(best, 3)} s)"
                        + (_phases(hacc, hacc_named) if phase == "restart" else ""),
                        "short": f"{_fmt(value)}×",
                        "met": value <= 1.0 if value is not None else None,
                    }
                )
    return out


def _spread(dht, kind):
    """The per-repeat spread of a DHT ratio beside the baseline's own (memory-create against memory)."""
    spread = dht.get("per_repeat", {})
    if kind not in spread or "memory-create" not in spread:
        return ""
    (lo, hi), (twin_lo, twin_hi) = spread[kind], spread["memory-create"]
    return (
        f"; per repeat {_fmt(lo)}–{_fmt(hi)}×, where memory-create against memory, the same in-memory work, "
        f"gives {_fmt(twin_lo)}–{_fmt(twin_hi)}×"
    )


def _phases(hacc, named):
    """The judged restart's phases beside the better MPI-IO's: the slowest rank's, medians (report.py's
    hacc_summary). A window's open is MPI_Win_allocate, its read the copy out of it, its close MPI_Win_free."""
    table = hacc["table"]
    best = min(
        (label for label in ("mpiio", "mpiio-coll") if label in table),
        key=lambda label: table[label]["restart_seconds"],
        default=None,
    )
    w = table.get(named, {}).get("restart_phases_slowest")
    m = table.get(best, {}).get("restart_phases_slowest")
    if w is None or m is None:
        return ""
    return (
        f"; slowest rank's phases, medians: window open {_fmt(w['open'], 3)} s, read {_fmt(w['copy'], 3)} s, "
        f"free {_fmt(w['close'], 3)} s; {best} open {_fmt(m['open'], 3)} s, read {_fmt(m['copy'], 3)} s, "
        f"close {_fmt(m['close'], 3)} s"
    )


def _link(meta):
    moved = meta.get("link_bytes") or []
    if len(moved) != 4:
        return "—"
    return f"n0 {moved[0] / 2**20:.0f} / {moved[1] / 2**20:.0f} MiB, n1 {moved[2] / 2**20:.0f} / {moved[3] / 2**20:.0f} MiB"


def markdown(nodes, meta, hacc_named):
    """results.md's section of the emulated nodes (nothing without their records)."""
    if not nodes:
        return []
    lines = [
        "",
        "## 2 emulated nodes",
        "",
        "Each node a network namespace (apps/video/emulate) with a veth link to a bridge; ranks dealt round robin "
        "(rank r on node r mod 2); MPI over TCP on the links (UCX_TLS=tcp,self, MPIR_CVAR_NOLOCAL=1: no shared "
        "memory between any two ranks); window files in the one --dir, on this machine's disk, as on one node. "
        "The nodes share the 2 cores: above 2 ranks they are oversubscribed. Ratios are medians over repeats, "
        "as on one node.",
        "",
        "Finalize deadlocks: jobs whose MPI_Finalize deadlocked after every rank had finished and verified its "
        "work (MPICH 4.0.2 over UCX's TCP transport, fixed upstream by MPICH PR #6596), ended by the programs' "
        "watchdog and accepted (bench/storage-windows/sw.h, sw_finalize).",
        "",
        "| records | ranks | repeats | seconds | bytes received / sent over each node's link | finalize deadlocks |",
        "|---|---|---|---|---|---|",
    ]
    for app in APPS:
        m = meta.get(app)
        if m:
            lines.append(
                f"| {app} | {m.get('ranks', '—')} | {m['repeats']} | {m.get('seconds', '—')} | {_link(m)} "
                f"| {m.get('finalize_deadlocks', '—')} |"
            )
    settings = sorted({meta[app].get("mpi_env") or "none" for app in APPS if app in meta})
    lines += ["", f"MPICH and UCX settings from the environment, beside emulate's: {'; '.join(settings)}."]
    for n, entry in nodes.items():
        lines += ["", f"### {WHERE.format(n=n)}"]
        for mode, rma in entry.get("rma", {}).items():
            lines += [
                "",
                f"RMA {RMA_MODES[mode]}, {rma['iters']} operations per measurement: storage / memory window "
                "throughput (atomics: inverse latency), median over repeats.",
                "",
                "| operation/bytes | memory GB/s | memory-create GB/s | storage GB/s | storage/memory "
                "| storage/memory-create |",
                "|---|---|---|---|---|---|",
            ]
            for key, row in rma["table"].items():
                unit = "usec:" if key.startswith(("fetch_and_op", "compare_and_swap")) else "gbps:"
                cells = [_fmt(row.get(unit + v)) for v in ("memory", "memory-create", "storage")]
                if unit == "usec:":
                    cells = [f"{c} µs" for c in cells]
                lines.append(
                    f"| {key} | {' | '.join(cells)} | {_fmt(row.get('memory'))} | {_fmt(row.get('memory-create'))} |"
                )
        dht = entry.get("dht")
        if dht:
            lines += [
                "",
                f"DHT, LV {dht['lv']} elements per rank, {dht['dht_bytes'] / 2**20:.0f} MiB in all:",
                "",
                "| variant | runs | total s | insert s | sync s | ratio to memory | ratio to memory-create | best-run ratio |",
                "|---|---|---|---|---|---|---|---|",
            ]
            for v, row in dht["table"].items():
                lines.append(
                    f"| {v} | {dht['runs'][v]} | {_fmt(row['seconds'])} | {_fmt(row['insert_seconds'])} "
                    f"| {_fmt(row['sync_seconds'], 3)} | {_fmt(dht['ratio_to_memory'].get(v))} "
                    f"| {_fmt(dht['ratio_to_memory_create'].get(v))} | {_fmt(dht['best_ratio_to_memory'].get(v))} |"
                )
        hacc = entry.get("hacc")
        if hacc:
            lines += [
                "",
                f"HACC-IO-like checkpoint/restart, {hacc['particles_per_rank']} particles per rank, one shared file "
                f"(judged: {hacc_named}):",
                "",
                "| variant | runs | checkpoint s | × best MPI-IO | restart s (cold cache) | × best MPI-IO |",
                "|---|---|---|---|---|---|",
            ]
            for v, row in hacc["table"].items():
                lines.append(
                    f"| {v} | {row['runs']} | {_fmt(row['checkpoint_seconds'], 3)} "
                    f"| {_fmt(row['checkpoint_to_best_mpiio'])} | {_fmt(row['restart_seconds'], 3)} "
                    f"| {_fmt(row['restart_to_best_mpiio'])} |"
                )
    return lines
