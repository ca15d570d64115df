# SPDX-License-Identifier: MIT
"""The placement section of results.md and its target rows, from results.json's "placement"
(bench/shared-objects/placement.py). Nothing when the file has no placement run."""

from __future__ import annotations

from target_rows import Definition, row

EXPERIMENT = "one workflow placed three ways on 2 emulated nodes, iterations/s (placement run)"
# The target rows keep their words as defined at a83af7c; the run also has a fourth way (hybrid DSM),
# reported beside them with no target.
RULE = "hybrid (shm within a node, MPI across) ≥ 1.5× all-MPI iterations/s, tasks split in blocks over 2 emulated nodes"
DEFINITIONS = {
    "hybrid-mpi-pipeline": Definition(
        EXPERIMENT,
        "001 names it as future work (no figure)",
        f"pipeline(4), 2 of 3 edges local: {RULE}",
        "a83af7c",
    ),
    "hybrid-mpi-scatter-gather": Definition(
        EXPERIMENT,
        "001 names it as future work (no figure)",
        f"scatter-gather(6), 4 of 8 edges local: {RULE}",
        "a83af7c",
    ),
}


def one(rows: list[dict], shape: str, placement: str) -> dict | None:
    found = [r for r in rows if r["shape"] == shape and r["placement"] == placement]
    return found[0] if found else None


def section(doc: dict) -> tuple[list[str], list[dict]]:
    """results.md lines and target rows."""
    placed = doc.get("placement")
    if not placed:
        return [], []
    md = ["## Placement: one node, hybrid and all-MPI on 2 emulated nodes", ""]
    md.append(
        f"Command: `{placed['command']}`, {placed['date']}, {placed['repeats']} repeat(s), "
        f"{placed['data_size']} bytes per producer, {placed['iterations']} iterations."
    )
    if "not_run" in placed:
        return md + ["", f"Not run: {placed['not_run']}.", ""], []
    if placed["quick"]:
        md += [
            "",
            "**Tiny sizes (--quick): a check of the harness, not a measurement; no target is judged.**",
        ]
    md += [
        "",
        "| workflow | placement | edges local | edge methods | iterations/s | MB/s |",
        "|---|---|---|---|---|---|",
    ]
    for r in placed["rows"]:
        md.append(
            f"| {r['shape']}({r['tasks']}) | {r['placement']} | {r['local_edges']} of {r['edges']} | "
            f"{', '.join(sorted(set(r['edge_methods'])))} | {r['iterations_per_s']:.1f} | {r['throughput_mb_s']:.1f} |"
        )
    targets = []
    for shape, tasks, id in (
        ("pipeline", 4, "hybrid-mpi-pipeline"),
        ("scatter-gather", 6, "hybrid-mpi-scatter-gather"),
    ):
        hybrid, mpi = one(placed["rows"], shape, "hybrid"), one(placed["rows"], shape, "all-MPI")
        if not hybrid or not mpi or placed["quick"]:
            continue
        ratio = hybrid["iterations_per_s"] / mpi["iterations_per_s"]
        md.append("")
        md.append(
            f"hybrid / all-MPI, {shape}({tasks}): {ratio:.2f}× (target ≥ 1.5: {'yes' if ratio >= 1.5 else '**no**'})"
        )
        targets.append(row(DEFINITIONS, id, f"{ratio:.2f}×", ratio >= 1.5))
    for shape, tasks in (("pipeline", 4), ("scatter-gather", 6)):
        dsm, mpi = one(placed["rows"], shape, "hybrid DSM"), one(placed["rows"], shape, "hybrid")
        if dsm and mpi and not placed["quick"]:
            ratio = dsm["iterations_per_s"] / mpi["iterations_per_s"]
            md += ["", f"hybrid DSM / hybrid MPI, {shape}({tasks}): {ratio:.2f}× (reported; no target)"]
    return md + [""], targets
