# SPDX-License-Identifier: MIT
"""The report of paper 004's scaling runs (issue 30; bench/storage-windows/run --paper): DHT and MapReduce,
weak and strong scaling over 1 to 8 ranks on 2 emulated nodes, beside the paper's figures (Figs. 9, 10
and 12). Writes results.json (summary, meta and every record, as report.py does), results.md and
dht-scaling.png, mapreduce-scaling.png to --out-dir. Not judged: the issue asks for the figures side by
side, and the suite's targets are judged by report.py.

Usage: scaling_report.py RAW --out-dir DIR   (RAW: the run's directory of JSON lines, or a results.json
written before, which regenerates the report byte for byte)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from report import load, median, recorded_machine  # noqa: E402
from report_plots import save_png  # noqa: E402

SCALINGS = ("weak", "strong")
DHT_VARIANTS = ("memory", "storage", "combined")
# MapReduce series as the paper's Fig. 12 names them ([NoFT]: no checkpoints).
MR_SERIES = {
    ("1s", "none"): "MR-1S [NoFT]",
    ("1s", "snapshot-nb"): "MR-1S",
    ("2s", "none"): "MR-2S [NoFT]",
    ("2s", "mpiio"): "MR-2S",
}
# The paper's figures, from its text (§3.3 and §3.5.2): Tegner (Lustre), 64 to 512 processes for MapReduce.
PAPER_MR = {
    "weak": {
        "overhead MR-1S": "Fig. 12(d): 3.8 % on average (64–512 processes, 1 GB each, 16 checkpoints)",
        "overhead MR-2S": "Fig. 12(d): — (not given in the text)",
        "MR-2S [NoFT] faster than MR-1S [NoFT]": "Fig. 12(c): 6.0 % on average",
        "MR-1S faster than MR-2S (checkpoints)": "Fig. 12(c): 59.3 % at 512 processes",
    },
    "strong": {
        "overhead MR-1S": "Fig. 12(b): 21.2 % at 512 processes (32 GB, 1 checkpoint)",
        "overhead MR-2S": "Fig. 12(b): 58.6 % at 512 processes",
        "MR-2S [NoFT] faster than MR-1S [NoFT]": "Fig. 12(a): 9.6 % on average",
        "MR-1S faster than MR-2S (checkpoints)": "Fig. 12(a): 17.6 % at 512 processes",
    },
}
PAPER_DHT = {
    "storage": "Fig. 9: 1.20× (SSD, 8 processes, one node); 1.02× (Lustre, 96 processes, 4 nodes)",
    "combined": "Fig. 10: 1.08× (combined 0.5, one node)",
}


def quartiles(values):
    if len(values) < 4:
        return None
    q1, _, q3 = statistics.quantiles(values, n=4)
    return [q1, q3]


def dht_summary(rows):
    """{scaling: {ranks: {variant: {...}, "ratio_to_memory": {...}}}}, and each variant's efficiency
    against the fewest ranks (weak: T(first) / T(n); strong: the speedup T(first) / T(n) over n / first)."""
    out = {}
    for scaling in SCALINGS:
        mine = [r for r in rows if r.get("label") == scaling]
        counts = sorted({r["ranks"] for r in mine})
        table = {}
        for n in counts:
            entry = {}
            for v in DHT_VARIANTS:
                runs = [r for r in mine if r["ranks"] == n and r["variant"] == v]
                if runs:
                    entry[v] = {
                        "seconds": median([r["seconds"] for r in runs]),
                        "insert_seconds": median([r["insert_seconds"] for r in runs]),
                        "runs": len(runs),
                        "lv": runs[0]["lv"],
                        "dht_bytes": runs[0]["dht_bytes"],
                    }
            memory = entry.get("memory", {}).get("seconds")
            entry["ratio_to_memory"] = {
                v: entry[v]["seconds"] / memory for v in ("storage", "combined") if v in entry and memory
            }
            table[str(n)] = entry
        if counts:
            first = table[str(counts[0])]
            for n in counts:
                for v in DHT_VARIANTS:
                    here = table[str(n)].get(v)
                    if here and v in first:
                        speedup = first[v]["seconds"] / here["seconds"]
                        here["efficiency"] = speedup if scaling == "weak" else speedup * counts[0] / n
        out[scaling] = table
    return out


def mapreduce_summary(rows, scaling):
    """{ranks: {series: median seconds, "overhead": {MR-1S, MR-2S: paired per-repeat overheads}, ...}}."""
    table = {}
    for n in sorted({r["ranks"] for r in rows}):
        mine = [r for r in rows if r["ranks"] == n]
        entry = {"series": {}, "overhead": {}, "checkpoints": None}
        for key, name in MR_SERIES.items():
            runs = [r for r in mine if (r["impl"], r["checkpoint"]) == key]
            if runs:
                entry["series"][name] = {"seconds": median([r["seconds"] for r in runs]), "runs": len(runs)}
            if key[1] != "none" and runs:
                entry["checkpoints"] = runs[0]["checkpoints"]
                entry["corpus_bytes"], entry["task_bytes"] = runs[0]["corpus_bytes"], runs[0]["task_bytes"]
        for impl, ckpt in (("1s", "snapshot-nb"), ("2s", "mpiio")):
            base = {r["repeat"]: r["seconds"] for r in mine if (r["impl"], r["checkpoint"]) == (impl, "none")}
            paired = sorted(
                (r["seconds"] - base[r["repeat"]]) / base[r["repeat"]]
                for r in mine
                if (r["impl"], r["checkpoint"]) == (impl, ckpt) and r["repeat"] in base
            )
            entry["overhead"][MR_SERIES[(impl, ckpt)]] = {
                "median": median(paired),
                "quartiles": quartiles(paired),
                "pairs": len(paired),
            }
        s = {k: v["seconds"] for k, v in entry["series"].items()}
        # "A faster than B by x": x = 1 - T(A) / T(B), as the paper states its comparisons.
        if s.get("MR-2S [NoFT]") and s.get("MR-1S [NoFT]"):
            entry["MR-2S [NoFT] faster than MR-1S [NoFT]"] = 1 - s["MR-2S [NoFT]"] / s["MR-1S [NoFT]"]
        if s.get("MR-1S") and s.get("MR-2S"):
            entry["MR-1S faster than MR-2S (checkpoints)"] = 1 - s["MR-1S"] / s["MR-2S"]
        checksums = {r["checksum"] for r in mine}
        entry["checksums_agree"] = len(checksums) == 1
        table[str(n)] = entry
    return {"scaling": scaling, "table": table}


def pct(x):
    return "—" if x is None else f"{100 * x:.1f} %"


def fmt(x, digits=2, unit=""):
    return "—" if x is None else f"{x:.{digits}f}{unit}"


def plot_dht(dht, out: Path):
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    for ax, scaling in zip(axes, SCALINGS, strict=True):
        table = dht.get(scaling, {})
        counts = [int(n) for n in table]
        for v in DHT_VARIANTS:
            ax.plot(counts, [table[str(n)].get(v, {}).get("seconds") for n in counts], "o-", label=v)
        ax.set_xscale("log", base=2)
        ax.set_xticks(counts, [str(n) for n in counts])
        ax.set_xlabel("ranks (2 emulated nodes)")
        ax.set_ylabel("seconds (median)")
        ax.set_title(f"DHT, {scaling} scaling")
        ax.legend(fontsize=7)
    fig.tight_layout()
    save_png(fig, out / "dht-scaling.png", dpi=110)
    plt.close(fig)


def plot_mapreduce(mr, out: Path):
    fig, axes = plt.subplots(2, 2, figsize=(9, 6))
    for col, scaling in enumerate(SCALINGS):
        table = mr.get(scaling, {}).get("table", {})
        counts = [int(n) for n in table]
        for name in MR_SERIES.values():
            axes[0][col].plot(
                counts,
                [table[str(n)]["series"].get(name, {}).get("seconds") for n in counts],
                "o-",
                label=name,
            )
        for name in ("MR-1S", "MR-2S"):
            axes[1][col].plot(
                counts,
                [100 * (table[str(n)]["overhead"][name]["median"] or 0) for n in counts],
                "o-",
                label=name,
            )
        axes[0][col].set_title(
            f"MapReduce, {scaling} scaling (paper Fig. 12({'c' if scaling == 'weak' else 'a'}))"
        )
        axes[0][col].set_ylabel("seconds (median)")
        axes[1][col].set_title(
            f"checkpoint overhead, {scaling} (Fig. 12({'d' if scaling == 'weak' else 'b'}))"
        )
        axes[1][col].set_ylabel("% (paired per repeat, median)")
        for ax in (axes[0][col], axes[1][col]):
            ax.set_xscale("log", base=2)
            ax.set_xticks(counts, [str(n) for n in counts])
            ax.set_xlabel("ranks (2 emulated nodes)")
            ax.legend(fontsize=7)
    fig.tight_layout()
    save_png(fig, out / "mapreduce-scaling.png", dpi=110)
    plt.close(fig)


def markdown(s, meta) -> str:
    cores = s.get("cores")
    lines = [
        "# Storage windows: paper 004's scaling on 2 emulated nodes (issue 30)",
        "",
        "Generated by `bench/storage-windows/scaling_report.py`; how it is run and what to read into it is in "
        "README.md.",
        "",
        f"Machine: {s['machine']}. Ranks dealt round robin over 2 emulated nodes (network namespaces, MPI over "
        f"TCP across the link); the nodes share the machine's {cores} cores, so counts above {cores} are "
        "oversubscribed.",
        "",
        "| records | command | date | repeats | seconds | load average (start, end) | finalize deadlocks |",
        "|---|---|---|---|---|---|---|",
    ]
    total = 0
    for app, m in meta.items():
        total += m.get("seconds", 0)
        lines.append(
            f"| {app} | `{m['command']}` | {m['date']} | {m['repeats']} | {m.get('seconds', '—')} "
            f"| {m.get('loadavg', '—')}, {m.get('loadavg_end', '—')} | {m.get('finalize_deadlocks', '—')} |"
        )
    lines += [
        "",
        f"The run took {total / 60:.0f} minutes. Finalize deadlocks: jobs whose MPI_Finalize deadlocked after "
        "every rank had finished and verified its work (MPICH 4.0.2 over UCX's TCP transport), ended by the "
        "programs' watchdog and accepted (bench/storage-windows/sw.h, sw_finalize). MPICH and UCX settings "
        "from the environment, beside emulate's (UCX_TLS=tcp,self) and MPIR_CVAR_NOLOCAL=1: "
        + ("; ".join(sorted({m.get("mpi_env") or "none" for m in meta.values()})) or "none")
        + ".",
    ]
    for scaling in SCALINGS:
        table = s["dht"].get(scaling, {})
        if not table:
            continue
        lines += [
            "",
            f"## DHT, {scaling} scaling",
            "",
            "Heap factor 4, 80 % fill; time = init + inserts + MPI_Win_sync, median of the repeats. Efficiency: "
            + (
                "the fewest ranks' time / this count's (the same work per rank)."
                if scaling == "weak"
                else "the speedup over the fewest ranks / the ranks added (the same total work)."
            ),
            "",
            "| ranks | LV per rank | DHT | memory s | storage s | combined 0.5 s | storage / memory "
            "| combined / memory | efficiency memory / storage / combined |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for n, e in table.items():
            any_v = next((e[v] for v in DHT_VARIANTS if v in e), {})
            eff = " / ".join(fmt(e.get(v, {}).get("efficiency")) for v in DHT_VARIANTS)
            lines.append(
                f"| {n} | {any_v.get('lv')} | {(any_v.get('dht_bytes') or 0) / 2**20:.0f} MiB "
                + " ".join(f"| {fmt(e.get(v, {}).get('seconds'))}" for v in DHT_VARIANTS)
                + f" | {fmt(e['ratio_to_memory'].get('storage'))}× | {fmt(e['ratio_to_memory'].get('combined'))}× "
                f"| {eff} |"
            )
    lines += ["", "![DHT scaling](dht-scaling.png)"]
    for scaling in SCALINGS:
        table = s["mapreduce"].get(scaling, {}).get("table", {})
        if not table:
            continue
        lines += [
            "",
            f"## MapReduce word count, {scaling} scaling",
            "",
            "Medians of the repeats; overheads paired per repeat (each implementation's run with checkpoints "
            "against its run without, back to back), median (quartiles). MR-1S: non-blocking snapshot "
            "checkpoints with write_mostly slots (the suite's named configuration); MR-2S: collective MPI-IO.",
            "",
            "| ranks | corpus | task | checkpoints | "
            + " | ".join(f"{name} s" for name in MR_SERIES.values())
            + " | overhead MR-1S | overhead MR-2S | counts agree |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for n, e in table.items():
            over = [
                pct(e["overhead"][k]["median"])
                + (
                    " (" + " – ".join(pct(q) for q in e["overhead"][k]["quartiles"]) + ")"
                    if e["overhead"][k]["quartiles"]
                    else ""
                )
                for k in ("MR-1S", "MR-2S")
            ]
            lines.append(
                f"| {n} | {(e.get('corpus_bytes') or 0) / 2**20:.0f} MiB | {(e.get('task_bytes') or 0) / 2**20:.0f} MiB "
                f"| {e.get('checkpoints')} | "
                + " | ".join(fmt(e["series"].get(name, {}).get("seconds")) for name in MR_SERIES.values())
                + f" | {over[0]} | {over[1]} | {'yes' if e['checksums_agree'] else 'NO'} |"
            )
    lines += ["", "![MapReduce scaling](mapreduce-scaling.png)"]
    lines += ["", "## The paper's figures and strata's, side by side", ""]
    counts = sorted({int(n) for sc in SCALINGS for n in s["mapreduce"].get(sc, {}).get("table", {})})
    lines += [
        "| scaling | figure | paper (Tegner, Lustre) | "
        + " | ".join(f"strata, {n} rank{'s' if n > 1 else ''}" for n in counts)
        + " |",
        "|---|---|---|" + "---|" * len(counts),
    ]
    for scaling in SCALINGS:
        table = s["mapreduce"].get(scaling, {}).get("table", {})
        for key, paper in PAPER_MR[scaling].items():
            cells = []
            for n in counts:
                e = table.get(str(n), {})
                if key.startswith("overhead"):
                    cells.append(
                        pct(e.get("overhead", {}).get(key.removeprefix("overhead "), {}).get("median"))
                    )
                else:
                    cells.append(pct(e.get(key)))
            lines.append(f"| {scaling} | MapReduce {key} | {paper} | " + " | ".join(cells) + " |")
    for scaling in SCALINGS:
        table = s["dht"].get(scaling, {})
        for kind, paper in PAPER_DHT.items():
            cells = [fmt(table.get(str(n), {}).get("ratio_to_memory", {}).get(kind), 2, "×") for n in counts]
            lines.append(f"| {scaling} | DHT {kind} / memory time | {paper} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "A faster than B by x: x = 1 − time(A) / time(B). The paper's MapReduce runs used 64 to 512 processes on "
        "3 to 22 nodes with Lustre, its DHT 8 processes on one node (SSD) and 96 on 4 nodes (Lustre): "
        "the comparison is of shapes and ratios, not of times.",
    ]
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("raw", type=Path)
    parser.add_argument("--out-dir", type=Path, required=True)
    args = parser.parse_args()
    records, meta = load(args.raw)
    machine = recorded_machine(args.raw)
    cores = re.search(r"(\d+) cores", machine)  # of the machine that ran it, as report.py recorded it
    summary = {
        "machine": machine,
        "cores": int(cores.group(1)) if cores else os.cpu_count(),
        "dht": dht_summary(records.get("scaling-dht", [])),
        "mapreduce": {
            scaling: mapreduce_summary(records.get(f"scaling-mapreduce-{scaling}", []), scaling)
            for scaling in SCALINGS
        },
    }
    args.out_dir.mkdir(parents=True, exist_ok=True)
    plot_dht(summary["dht"], args.out_dir)
    plot_mapreduce(summary["mapreduce"], args.out_dir)
    doc = {"summary": summary, "meta": meta, "records": records}
    (args.out_dir / "results.json").write_text(json.dumps(doc, indent=1) + "\n")
    (args.out_dir / "results.md").write_text(markdown(summary, meta))
    print(f"wrote {args.out_dir}/results.json, results.md and plots")


if __name__ == "__main__":
    main()
