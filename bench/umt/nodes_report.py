# SPDX-License-Identifier: MIT
"""Writes results.md and nodes_utilization.png from bench/umt/nodes.py's results.json (two nodes).

nodes_report.py RESULTS_JSON --out-dir DIR
"""

import argparse
import json
from pathlib import Path


def verdicts(row, targets):
    """The targets this row is judged on: (name, met) pairs."""
    out = [("fraction of bound", row["fraction_of_bound"] >= targets["fraction_of_bound"])]
    if row["paper"]:
        out.append(("paper speedup", row["speedup_vs_off"] >= targets["paper_speedup"]))
    out.append(("oversubscription", row["oversubscribed_share_median"] <= targets["oversubscribed_share"]))
    return out


def table(document):
    targets = document["targets"]
    lines = [
        "| case | mode (cover) | wall s | speedup | bound 1/util(off) | of bound | CPU n0 / n1 "
        "| network wait n0 / n1 | covers n0 / n1 | oversubscribed | targets |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in document["summary"]:
        judged = row["mode"] != "off" and "speedup_vs_off" in row
        met = (
            ", ".join(f"{name} {'met' if ok else 'MISSED'}" for name, ok in verdicts(row, targets))
            if judged
            else ""
        )
        lines.append(
            "| {case} | {mode} ({cover}) | {wall:.3f} | {speedup} | {bound} | {fraction} | {u0:.0%} / {u1:.0%} "
            "| {w0:.0%} / {w1:.0%} | {c0:g} / {c1:g} | {over:.2%} | {met} |".format(
                case=f"{row['experiment']}: {row['label']}",
                mode=row["mode"],
                cover=row["cover"],
                wall=row["wall_s_median"],
                speedup=f"{row['speedup_vs_off']:.2f}x" if judged else "",
                bound=f"{row['bound']:.2f}x" if judged else "",
                fraction=f"{row['fraction_of_bound']:.0%}" if judged else "",
                u0=row["node_utilization_median"][0],
                u1=row["node_utilization_median"][1],
                w0=row["node_network_wait_share_median"][0],
                w1=row["node_network_wait_share_median"][1],
                c0=row["node_covers_median"][0],
                c1=row["node_covers_median"][1],
                over=row["oversubscribed_share_median"],
                met=met,
            )
        )
    return lines


def plot(document, path):
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    firsts = {}
    for run in document["runs"]:
        firsts.setdefault((run["experiment"], run["label"]), {}).setdefault(run["mode"], run)
    fig, axes = plt.subplots(len(firsts), 1, figsize=(9, 2.4 * len(firsts)), squeeze=False)
    for ax, ((experiment, label), by_mode) in zip(axes[:, 0], firsts.items()):
        for mode, run in by_mode.items():
            for node in range(2):
                points = run["node_cpu_series"]
                ax.plot([p[0] for p in points], [p[1 + node] for p in points],
                        label=f"{mode} n{node}", linestyle="-" if mode == "off" else "--")  # fmt: skip
        ax.set_title(f"{experiment}: {label}", fontsize=9)
        ax.set_ylabel("CPU of the node")
        ax.set_ylim(0, 1.1)
        ax.legend(fontsize=7, ncol=4)
    axes[-1, 0].set_xlabel("s since mpiexec started (first repeat)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("results")
    parser.add_argument("--out-dir", required=True)
    args = parser.parse_args()
    document = json.loads(Path(args.results).read_text())
    out = Path(args.out_dir)
    lines = [
        "# UMT on two emulated nodes (paper 002 §IV, two nodes)",
        "",
        f"`{document['command']}`, {document['date']}, {document['settings']['repeats']} repeats, "
        f'kernel {document["machine"]["kernel"]}. Methodology: README.md ("Two nodes").',
        "",
        *table(document),
        "",
        f"Failures: {len(document['failures'])}.",
    ]
    for failure in document["failures"]:
        lines.append(f"- {failure['experiment']} {failure['label']} {failure['mode']} #{failure['repeat']}: "
                     f"{failure['error'].splitlines()[0] if failure['error'] else ''}")  # fmt: skip
    (out / "results.md").write_text("\n".join(lines) + "\n")
    if document["runs"]:
        plot(document, out / "nodes_utilization.png")


if __name__ == "__main__":
    main()
