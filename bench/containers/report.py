# SPDX-License-Identifier: MIT
"""Judges results.json (bench/containers/run) against the suite's target (its `targets` rows,
written back into results.json) and writes results.md; byte for byte the same for the same JSON."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from target_rows import Definition, row  # noqa: E402

NAMED = "9b22a76"
# The full run judges; a smoke run (--quick: other sizes) is reported, not judged.
JUDGED = {"size": 1 << 20, "iterations": 200, "lengths": list(range(2, 10)), "widths": list(range(1, 8))}
DEFINITIONS = {
    "containers-vs-processes": Definition(
        "every task in a crun container of its own vs the same tasks as plain processes, shm ports "
        "between them, side by side in one run (runs alternate)",
        "001 Fig. 7: throughput in containers and on the machine directly nearly identical",
        "containers / processes >= 0.90 in every configuration: pipelines of 2-9 tasks and "
        "scatter-gathers of 1-7 workers, 1 MB messages, 200 iterations, medians of 3 runs",
        NAMED,
    ),
}


def judge(r: dict) -> list[dict]:
    by = {(x["shape"], x["n"], x["mode"]): x["throughput_mb_s"] for x in r["rows"]}
    configs = sorted({(x["shape"], x["n"]) for x in r["rows"]})
    ratios = {c: by[(*c, "container")] / by[(*c, "process")] for c in configs}
    worst = min(ratios, key=ratios.get)
    full = (
        r["size"] == JUDGED["size"]
        and r["iterations"] == JUDGED["iterations"]
        and sorted(n for s, n in configs if s == "pipeline") == JUDGED["lengths"]
        and sorted(n for s, n in configs if s == "scatter-gather") == JUDGED["widths"]
        and all(x["repeats"] >= 3 for x in r["rows"])
    )
    measured = f"lowest {ratios[worst]:.2f}x ({worst[0]} {worst[1]}); {len(configs)} configurations"
    if not full:
        measured += "; a smoke run, not judged"
    met = all(v >= 0.90 for v in ratios.values()) if full else None
    return [row(DEFINITIONS, "containers-vs-processes", measured, met)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("results", type=Path)
    ap.add_argument("--out-dir", type=Path, required=True)
    args = ap.parse_args()
    r = json.loads(args.results.read_text())
    r["targets"] = judge(r)
    args.results.write_text(json.dumps(r, indent=2) + "\n")
    by = {(x["shape"], x["n"], x["mode"]): x for x in r["rows"]}
    lines = [
        "# Containers against processes (paper 001 Fig. 7)",
        "",
        f"Command: `{r['command']}` ({r['date']}, {r['machine']['cpus']} CPUs, kernel {r['machine']['kernel']}).",
        f"Each message {r['size']} bytes, {r['iterations']} iterations; medians of {r['rows'][0]['repeats']} runs.",
    ]
    if r.get("note"):
        lines += ["", f"**Note:** {r['note']}"]
    verdict = {True: "met", False: "**missed**", None: "not judged"}
    lines += ["", "## Target", "", "| target | measured | verdict |", "|---|---|---|"]
    lines += [f"| {t['target']} | {t['measured']} | {verdict[t['met']]} |" for t in r["targets"]]
    lines += [
        "",
        "| shape | tasks / width | processes MB/s | containers MB/s | containers / processes |",
        "|---|---|---|---|---|",
    ]
    for shape, n in sorted({(x["shape"], x["n"]) for x in r["rows"]}):
        p = by[(shape, n, "process")]["throughput_mb_s"]
        c = by[(shape, n, "container")]["throughput_mb_s"]
        lines.append(f"| {shape} | {n} | {p:.1f} | {c:.1f} | {c / p:.2f} |")
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / "results.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
