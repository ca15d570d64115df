# SPDX-License-Identifier: MIT
"""Writes results.md from results.json (bench/containers/run), byte for byte the same for the same JSON."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("results", type=Path)
    ap.add_argument("--out-dir", type=Path, required=True)
    args = ap.parse_args()
    r = json.loads(args.results.read_text())
    by = {(row["shape"], row["n"], row["mode"]): row for row in r["rows"]}
    lines = [
        "# Containers against processes (paper 001 Fig. 7)",
        "",
        f"Command: `{r['command']}` ({r['date']}, {r['machine']['cpus']} CPUs, kernel {r['machine']['kernel']}).",
        f"Each message {r['size']} bytes, {r['iterations']} iterations; medians of {r['rows'][0]['repeats']} runs.",
    ]
    if r.get("note"):
        lines += ["", f"**Note:** {r['note']}"]
    lines += [
        "",
        "| shape | tasks / width | processes MB/s | containers MB/s | containers / processes |",
        "|---|---|---|---|---|",
    ]
    for shape, n in sorted({(row["shape"], row["n"]) for row in r["rows"]}):
        p = by[(shape, n, "process")]["throughput_mb_s"]
        c = by[(shape, n, "container")]["throughput_mb_s"]
        lines.append(f"| {shape} | {n} | {p:.1f} | {c:.1f} | {c / p:.2f} |")
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / "results.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
