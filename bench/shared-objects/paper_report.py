# SPDX-License-Identifier: MIT
"""Turns the results.json of bench/shared-objects/run --paper into results.md and fig6_paper.png: paper
001's Fig. 6 figures beside strata's. No targets: the run is compared with the paper, not judged.
Regenerates the same bytes from the same results.json (it also writes its summary back into it)."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))
from paper import MB, estimate_s, plan, rates_of  # noqa: E402
from report_plots import save_png  # noqa: E402

COLORS = {"shm": "tab:blue", "mpi": "tab:red", "threads": "tab:gray"}
NAMES = {"shm": "shm (Dhmem)", "mpi": "MPI", "threads": "threads"}
STYLES = ["-", "--", ":", "-."]


def summarize(runs: list[dict]) -> list[dict]:
    """One row per configuration and method: mean (the paper's statistic), median, min and max."""
    keys = sorted({(r["shape"], r["tasks"], r["data_size"], r["iterations"], r["method"]) for r in runs})
    rows = []
    for shape, tasks, size, its, method in keys:
        members = [
            r
            for r in runs
            if (r["shape"], r["tasks"], r["data_size"], r["iterations"], r["method"])
            == (shape, tasks, size, its, method)
        ]
        mb_s = [r["throughput_mb_s"] for r in members]
        it_s = [r["iterations_per_s"] for r in members]
        rows.append(
            {
                "shape": shape,
                "tasks": tasks,
                "data_size": size,
                "iterations": its,
                "method": method,
                "runs": len(members),
                "throughput_mb_s_mean": statistics.mean(mb_s),
                "throughput_mb_s_median": statistics.median(mb_s),
                "throughput_mb_s_min": min(mb_s),
                "throughput_mb_s_max": max(mb_s),
                "iterations_per_s_mean": statistics.mean(it_s),
                "iterations_per_s_median": statistics.median(it_s),
            }
        )
    return rows


def find(rows: list[dict], **match) -> dict | None:
    found = [r for r in rows if all(r[k] == v for k, v in match.items())]
    return found[0] if found else None


def label(shape: str, tasks: int) -> str:
    return shape if shape == "simple" else f"{shape}({tasks})"


def size_text(size: int) -> str:
    for unit, scale in (("GB", 10**9), ("MB", 10**6), ("KB", 10**3)):
        if size >= scale:
            return f"{size / scale:g} {unit}"
    return f"{size} B"


def hours(seconds: float) -> str:
    if seconds >= 5400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 60:.0f} min" if seconds >= 90 else f"{seconds:.0f} s"


def what_ran(doc: dict) -> list[str]:
    """The run's plan against the paper's, and the full spec's duration at this run's own rates."""
    paper, settings = doc["paper"], doc["settings"]
    left_out = []
    for key, name, show in (
        ("sizes", "sizes", size_text),
        ("iterations", "iteration counts", str),
        ("methods", "methods", str),
    ):
        missing = [show(v) for v in paper[key] if v not in settings[key]]
        if missing:
            left_out.append(f"{name} {', '.join(missing)}")
    if settings["repeats"] < paper["repeats"]:
        left_out.append(f"{paper['repeats'] - settings['repeats']} of the paper's {paper['repeats']} repeats")
    spec = (
        f"sizes {', '.join(size_text(s) for s in settings['sizes'])}; "
        f"{' and '.join(str(i) for i in settings['iterations'])} iterations; {settings['repeats']} repeat{'s' if settings['repeats'] > 1 else ''}; "
        f"methods {', '.join(settings['methods'])}"
    )
    lines = [f"This run: {spec}."]
    if left_out:
        lines[0] += f" **A subset of the paper's spec**: left out {'; '.join(left_out)}."
    else:
        lines[0] += " The paper's full spec."
    try:
        rates, launch = rates_of(doc["runs"])
        full = plan(paper["sizes"], paper["iterations"], paper["methods"])
        lines.append(
            f"At this run's own rates (sizes not run: at the throughput of the largest size run), the paper's "
            f"full spec takes {hours(estimate_s(full, paper['repeats'], rates, launch))} of runs on this machine "
            "(bench/shared-objects/paper.py, `estimate_s`)."
        )
    except (ValueError, KeyError, statistics.StatisticsError):
        lines.append("This run measured too little to estimate the paper's full spec from it.")
    return lines


def side_by_side(doc: dict, rows: list[dict]) -> list[str]:
    paper = doc["paper"]
    md = [
        "| workflow | paper Dhmem max it/s | paper MPI max it/s | paper Dhmem / MPI | strata shm max it/s | "
        "strata MPI max it/s | strata shm / MPI |",
        "|---|---|---|---|---|---|---|",
    ]
    for shape, tasks in paper["shapes"]:
        p = paper["max_iterations_per_s"][shape]
        best = {}
        for method in ("shm", "mpi"):
            mine = [r for r in rows if r["shape"] == shape and r["method"] == method]
            best[method] = max(mine, key=lambda r: r["iterations_per_s_mean"]) if mine else None
        cells = [
            f"{b['iterations_per_s_mean']:.1f} ({size_text(b['data_size'])}, {b['iterations']} it.)"
            if b
            else "—"
            for b in (best["shm"], best["mpi"])
        ]
        ratio = (
            f"{best['shm']['iterations_per_s_mean'] / best['mpi']['iterations_per_s_mean']:.2f}×"
            if best["shm"] and best["mpi"]
            else "—"
        )
        md.append(
            f"| {label(shape, tasks)} | {p['shm']} | {p['mpi']} | {p['ratio']}× | {cells[0]} | {cells[1]} | {ratio} |"
        )
    return md


def claims(doc: dict, rows: list[dict]) -> list[str]:
    """The figure's two claims, checked against strata's rows."""
    pairs = [
        (r, find(rows, shape=r["shape"], data_size=r["data_size"], iterations=r["iterations"], method="mpi"))
        for r in rows
        if r["method"] == "shm"
    ]
    pairs = [(s, m) for s, m in pairs if m]
    md = [f'- The paper: "{doc["paper"]["claims"][0]}" (§IV-F). ']
    if pairs:
        below = [
            f"{label(s['shape'], s['tasks'])} at {size_text(s['data_size'])} × {s['iterations']}"
            for s, m in pairs
            if s["throughput_mb_s_mean"] <= m["throughput_mb_s_mean"]
        ]
        md[0] += f"strata: shm above MPI in {len(pairs) - len(below)} of {len(pairs)} configurations"
        md[0] += f" (not in: {', '.join(below)})." if below else "."
    else:
        md[0] += "strata: no configuration ran both."
    md.append(
        f'- The paper: "{doc["paper"]["claims"][1]}" (§IV-F). strata, mean MB/s at the largest size run'
    )
    flat = []
    for shape, tasks in doc["paper"]["shapes"]:
        for method in doc["settings"]["methods"]:
            mine = sorted(
                (r["data_size"], r["throughput_mb_s_mean"])
                for r in rows
                if r["shape"] == shape
                and r["method"] == method
                and r["iterations"] == max(doc["settings"]["iterations"])
            )
            if len(mine) >= 2:
                (s0, v0), (s1, v1) = mine[-2], mine[-1]
                flat.append(
                    f"{label(shape, tasks)} {method} {v1 / v0:.2f}× ({size_text(s1)} / {size_text(s0)})"
                )
    md[-1] += (
        f" over the size before it, at {max(doc['settings']['iterations'])} iterations: {'; '.join(flat)}."
        if flat
        else ": fewer than two sizes ran."
    )
    return md


def every_configuration(doc: dict, rows: list[dict]) -> list[str]:
    methods = doc["settings"]["methods"]
    head = " | ".join(f"{NAMES[m]} MB/s mean (min–max)" for m in methods)
    its = " | ".join(f"{NAMES[m]} it/s" for m in methods)
    md = [
        f"| workflow | size | iterations | runs | {head} | shm / MPI | {its} |",
        "|---|---|---|---|" + "---|" * (2 * len(methods) + 1),
    ]
    for c in doc["configurations"]:
        found = {
            m: find(rows, shape=c["shape"], data_size=c["size"], iterations=c["iterations"], method=m)
            for m in methods
        }
        if not any(found.values()):
            continue
        mb = " | ".join(
            f"{r['throughput_mb_s_mean']:.0f} ({r['throughput_mb_s_min']:.0f}–{r['throughput_mb_s_max']:.0f})"
            if r
            else "—"
            for r in found.values()
        )
        it = " | ".join(f"{r['iterations_per_s_mean']:.1f}" if r else "—" for r in found.values())
        s, m = found.get("shm"), found.get("mpi")
        ratio = f"{s['throughput_mb_s_mean'] / m['throughput_mb_s_mean']:.2f}×" if s and m else "—"
        runs = "/".join(str(r["runs"]) if r else "0" for r in found.values())
        md.append(
            f"| {label(c['shape'], c['tasks'])} | {size_text(c['size'])} | {c['iterations']} | {runs} | {mb} | {ratio} | {it} |"
        )
    return md


def not_run(doc: dict) -> list[str]:
    if not doc["skipped"] and not doc["failures"]:
        return []
    md = [
        "## Not run or failed",
        "",
        "| workflow | method | size | iterations | repeat | why |",
        "|---|---|---|---|---|---|",
    ]
    for entry in doc["skipped"] + doc["failures"]:
        why = entry.get("reason") or "failed: " + " ".join(entry["error"].split())[:300].replace("|", "\\|")
        md.append(
            f"| {label(entry['shape'], entry['tasks'])} | {entry['method']} | {size_text(entry['data_size'])} | "
            f"{entry['iterations']} | {entry['repeat'] + 1} | {why} |"
        )
    return md + [""]


def plot(doc: dict, rows: list[dict], path: Path) -> None:
    """Fig. 6's axes (MB/s against the size, log-log) and iterations/s, with the paper's maxima."""
    shapes = doc["paper"]["shapes"]
    fig, axes = plt.subplots(2, len(shapes), figsize=(13, 7.5), squeeze=False)
    for col, (shape, tasks) in enumerate(shapes):
        top, bottom = axes[0][col], axes[1][col]
        for method in doc["settings"]["methods"]:
            for i, its in enumerate(doc["settings"]["iterations"]):
                mine = sorted(
                    (r["data_size"] / MB, r["throughput_mb_s_mean"], r["iterations_per_s_mean"])
                    for r in rows
                    if r["shape"] == shape and r["method"] == method and r["iterations"] == its
                )
                if not mine:
                    continue
                x, mb_s, it_s = zip(*mine, strict=True)
                style = {"color": COLORS[method], "ls": STYLES[i % len(STYLES)], "marker": "o"}
                top.plot(x, mb_s, label=f"strata {NAMES[method]}, {its} it.", **style)
                bottom.plot(x, it_s, label=f"strata {NAMES[method]}, {its} it.", **style)
            paper_max = doc["paper"]["max_iterations_per_s"][shape].get(method)
            if paper_max:
                bottom.axhline(
                    paper_max, color=COLORS[method], ls=(0, (1, 3)), label=f"paper {NAMES[method]} max"
                )
        for ax in (top, bottom):
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("data per producer (MB)")
            ax.legend(fontsize=7)
        top.set_ylabel("throughput (MB/s)")
        bottom.set_ylabel("iterations/s")
        top.set_title(f"{label(shape, tasks)}: throughput")
        bottom.set_title(f"{label(shape, tasks)}: iterations/s")
    fig.suptitle("strata at paper 001's Fig. 6 (top: the figure's axes, log-log)")
    fig.tight_layout()
    save_png(fig, path, dpi=90)
    plt.close(fig)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path)
    ap.add_argument("--out-dir", type=Path, required=True)
    args = ap.parse_args()
    doc = json.loads(args.results.read_text())
    rows = summarize(doc["runs"])
    doc["summary"] = rows
    doc["targets"] = []  # compared with the paper, not judged (issue 30)
    args.results.write_text(json.dumps(doc, indent=1) + "\n")
    plot(doc, rows, args.out_dir / "fig6_paper.png")

    m = doc["machine"]
    done = len({(r["shape"], r["data_size"], r["iterations"]) for r in doc["runs"]})
    md = [
        "# Shared objects at the paper's scale: paper 001's Fig. 6 (issue 30)",
        "",
        f"Command: `{doc['command']}` — {doc['date']}, {hours(doc['seconds'])}"
        + (
            "."
            if doc["complete"]
            else f", **incomplete**: it ended after {done} of {len(doc['configurations'])} configurations."
        ),
        "",
        f"Machine: {m['cpus']} CPUs, {m['memory_bytes'] / 2**30:.1f} GiB, Linux {m['kernel']}; at the start "
        f"{m['at_start']['mem_available'] / 2**30:.1f} GiB available, the segment directory "
        f"{m['at_start']['shm_dir_size'] / 2**30:.1f} GiB; load average "
        f"{', '.join(f'{x:.1f}' for x in doc['load_average']['start'])} at the start, "
        f"{', '.join(f'{x:.1f}' for x in doc['load_average']['now'])} at the end.",
        "",
        "\n\n".join(what_ran(doc)),
        "",
        f"The paper's run: {doc['paper']['source']}; {doc['paper']['machine']}. Every configuration is one "
        "`strata run --shape ... --json` per repeat (bench.py's `strata_run`, as in the suite), the methods "
        "back to back in each repeat, their order alternating; every consumer reads and checks all the data "
        f"of every iteration ({doc['settings']['warmup']} untimed warmup iterations first). Throughput is the "
        "paper's: bytes handed over along every edge / the timed iterations' wall time; figures are means of "
        "the repeats, as the paper's (medians in results.json). shm is strata's segment and ports (the "
        "paper's Dhmem), MPI is MPICH over shared memory, one rank per task. A configuration whose buffers do "
        "not fit in memory (and for shm in the segment directory) is not started (below).",
        "",
        "## The paper's figures and strata's, side by side",
        "",
        "Fig. 6's plotted points are not in the paper's text (the plot is an image), so none is read off "
        "it; §IV-F gives the maximum iterations/s across the figure's runs for each workflow, Dhmem against "
        "MPI. strata's: the highest mean iterations/s over the sizes and iteration counts run (where reached).",
        "",
        *side_by_side(doc, rows),
        "",
        *claims(doc, rows),
        "",
        "![](fig6_paper.png)",
        "",
        "## Every configuration",
        "",
        f"{len(doc['runs'])} runs. *runs*: per method, in the order of the columns.",
        "",
        *every_configuration(doc, rows),
        "",
        *not_run(doc),
    ]
    (args.out_dir / "results.md").write_text("\n".join(md))
    print(f"wrote {args.out_dir / 'results.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
