# SPDX-License-Identifier: MIT
"""The report's part for the ratio rerun (ratios.py): MPI's own bandwidth and the ratios judged on it."""

from __future__ import annotations

import statistics

NOT_PHYSICAL = (
    "not established: memcpy is no limit for this work (a two-process pipeline is not bounded by a "
    "single-thread memcpy, and the memcpy reuses one buffer while the port alternates two slots); no "
    "same-work baseline measured yet"
)
THREADS_UNDER_AUTOGROUP = (
    "not established: measured outside a cpu cgroup, where Linux's autogroup gives each session one share of "
    "a loaded machine — MPICH's launcher puts every shm task in a session of its own while the threads "
    "method's tasks share one, so under load the threads got a fraction of the CPU the shm tasks got "
    "(docs/benchmarks/shared-objects/README.md)"
)


def threads_verdict(rerun: dict | None, met: bool) -> str:
    """The shm / threads verdict: judged only on a rerun made in a cpu cgroup of its own (no autogroup)."""
    if not rerun or not rerun.get("cpu_cgroup"):
        return f"**{THREADS_UNDER_AUTOGROUP}**"
    return "yes" if met else "**no**"


def medians(rerun: dict) -> dict[tuple[str, str], float]:
    """Median iterations/s per (shape, variant) of the rerun."""
    groups: dict[tuple[str, str], list[float]] = {}
    for r in rerun["runs"]:
        groups.setdefault((r["shape"], r["variant"]), []).append(r["iterations_per_s"])
    return {k: statistics.median(v) for k, v in groups.items()}


def mpi_variant(rerun: dict) -> str:
    best = rerun["best_transport"]
    return "mpi (default)" if best == "default" else f"mpi ({best})"


def fastest_mpi(rerun: dict, shape: str) -> float:
    """The strongest MPI baseline of a shape: the MPI variant (default or best p2p setting) with most iterations/s."""
    return max(v for (s, variant), v in medians(rerun).items() if s == shape and variant.startswith("mpi"))


def ratio(rerun: dict, shape: str, a: str, b: str) -> float:
    m = medians(rerun)
    return m[(shape, a)] / (fastest_mpi(rerun, shape) if b == "mpi" else m[(shape, b)])


def section(rerun: dict) -> list[str]:
    """Markdown: MPI's point-to-point bandwidth per transport setting and the rerun's medians."""
    load_before = ", ".join(f"{x:.1f}" for x in rerun["load_average_before"])
    load_after = ", ".join(f"{x:.1f}" for x in rerun["load_average_after"])
    memcpy = statistics.median(rerun["memcpy_10MB_mb_s"])
    md = [
        "## The shm / MPI and shm / threads ratios against a checked baseline (rerun)",
        "",
        f"Command: `{rerun['command']}`; {rerun['date']}, {rerun['seconds']:.0f} s, {rerun['repeats']} repeats; "
        f"load average {load_before} before, {load_after} after.",
        "",
        "First MPI's own point-to-point bandwidth between two ranks on this node "
        "(`bench_shared_objects_mpi_p2p`: 10 MB MPI_Send → MPI_Recv, nothing else), under each MPICH 4.0.2 "
        "intra-node setting, interleaved; the one with the highest median is the MPI path the workflows then use "
        f"(a one-thread memcpy of 10 MB ran at {memcpy:.0f} MB/s in the same minutes, for scale):",
        "",
        "| MPICH setting | environment | MB/s (median) | min–max |",
        "|---|---|---|---|",
    ]
    for name, values in rerun["p2p_mb_s"].items():
        env = " ".join(f"{k}={v}" for k, v in rerun["transports"][name].items()) or "—"
        mark = " (best)" if name == rerun["best_transport"] else ""
        md.append(
            f"| {name}{mark} | `{env}` | {statistics.median(values):.0f} | {min(values):.0f}–{max(values):.0f} |"
        )
    m = medians(rerun)
    shapes = list(dict.fromkeys(r["shape"] for r in rerun["runs"]))
    variants = list(dict.fromkeys(r["variant"] for r in rerun["runs"]))
    best = mpi_variant(rerun)
    p2p_best = statistics.median(rerun["p2p_mb_s"][rerun["best_transport"]])
    md += [
        "",
        "Then the 10 MB workflows, every repeat in a fresh random order (iterations/s, median). The shm / MPI "
        "ratios are taken against the faster of the two MPI variants of each workflow (the stronger baseline):",
        "",
        "| workflow | " + " | ".join(variants) + " | shm / fastest MPI | shm / threads |",
        "|---|" + "---|" * (len(variants) + 2),
    ]
    for shape in shapes:
        cells = " | ".join(f"{m[(shape, v)]:.1f}" for v in variants)
        md.append(
            f"| {shape} | {cells} | {m[(shape, 'shm')] / fastest_mpi(rerun, shape):.2f}x | "
            f"{m[(shape, 'shm')] / m[(shape, 'threads')]:.2f}x |"
        )
    simple_mpi = m[("simple", best)] * 10
    md += [
        "",
        f"Sanity of the MPI baseline: the simple workflow's MPI handoffs move {simple_mpi:.0f} MB/s, "
        f"{simple_mpi / p2p_best:.2f} of MPI's own point-to-point bandwidth with the same setting "
        f"({p2p_best:.0f} MB/s)"
        + (
            ": the workflow's MPI method moves data about as fast as MPI itself does here, so a slow MPI is "
            "MPI's own intra-node path on these 2 shared cores, not the workflow's use of it."
            if simple_mpi / p2p_best >= 0.7
            else ": the workflow's MPI method is well below MPI's own bandwidth, so the ratios below flatter shm."
        )
        + f" MPI's own bandwidth is {p2p_best / memcpy:.2f}× the warm one-thread memcpy of the same 10 MB "
        f"({memcpy:.0f} MB/s): the ratios measure MPICH's intra-node path against the shm layer on 2 cores, "
        "not a general shm-versus-MPI factor.",
        "",
    ]
    return md
