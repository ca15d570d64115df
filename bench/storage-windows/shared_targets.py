# SPDX-License-Identifier: MIT
"""storage-windows' targets in the shape every suite's results.json shares (bench/target_rows.py).

report.py judges each target (its summary's "targets", the rows results.md prints); shared_rows() gives
each row its id and its definition from DEFINITIONS, as written down before the run that judges it, with
a short measured figure. A definition that a later one replaced keeps its own row (superseded_by) when the
same run measures it: mSTREAM's earlier baselines and configurations, MapReduce's earlier configurations.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from target_rows import Definition, row  # noqa: E402

MSTREAM = "mSTREAM, {} / memory window bandwidth (the four kernels' paired ratios)"
WRITTEN = "a memory window whose pages are all written once before the kernels"
LAZY = "the memory window as the cold iteration leaves it (its never-written pages read the zero page)"
DHT = "DHT of 2 ranks, insert time against memory windows, median"
OOC = "DHT at {}× a 192 MiB memory cgroup"
HACC = "HACC-IO-like checkpoint/restart of 2 × 2 Mi particles, 152 MiB in one shared file, medians"
MR = "MapReduce word count (1 GiB corpus), checkpoint overhead per repeat against the same run without"
PAIRED = (
    "met when the upper quartile of the paired per-repeat overheads is ≤ {0}, missed when the lower is > {0}"
)
VS_MR2S = (
    "≤ 0.5× MR-2S's (collective MPI-IO) overhead: met when the upper quartile of its paired overheads is ≤ half "
    "MR-2S's lower quartile, missed when its lower is above half MR-2S's upper"
)
MR_PAPER, MR2S_PAPER = "004 Fig. 12(d): 3.8 % weak, 21 % strong scaling", "004 Fig. 12(d): MR-2S 58.6 %"
RMA_TARGET = "storage within 5 % of MPI_Win_allocate memory windows: the median of the per-cell ratios"
DHT_STORAGE, DHT_COMBINED = "storage ≤ 1.15× memory", "combined 0.5 ≤ 1.05× memory"
HACC_CHECKPOINT = (
    "checkpoint through a storage window with access_style=write_once ≤ 1.0× the better of independent "
    "and collective MPI-IO"
)
HACC_RESTART = (
    "restart (cold cache) through a storage window with access_style=read_once ≤ 1.0× MPI-IO's read time"
)
# The emulated nodes' rows (issue 29, nodes_report.py): the one-node targets above at 4 and 8 ranks over 2
# emulated nodes, a row (and a definition) per rank count and IMB-RMA mode.
NODES_NAMED = "37fbe71"
NODES = "{} ranks on 2 emulated nodes (network namespaces, MPI over TCP across the link)"
RMA_PAPER = {
    "single": "004 Fig. 5: ≈ 1 % (2 ranks on 2 nodes)",
    "multiple": "004 Fig. 6(a, b): no penalty (puts 6.21 vs 5.89 GB/s, gets 1.44 vs 1.49 GB/s; 128 ranks, 6 nodes)",
    "parallel": "004 Fig. 6(c, d): the same Exchange_put and Exchange_get times (128 ranks, 6 nodes)",
}
# The MapReduce configurations judged, newest first, each with the commit that named it.
MR_CHAIN = [
    ("mapreduce", "MR-1S non-blocking snapshot (write_mostly slots)", "9842b43"),
    ("mapreduce-nb", "MR-1S non-blocking snapshot", "263893a"),
    ("mapreduce-snapshot", "MR-1S snapshot", "b0b7405"),
]


def _mstream(kind, limit, named, headline):
    base = f"mstream-{kind}"
    label = "combined 0.5" if kind == "combined" else kind
    return {
        base: Definition(
            MSTREAM.format(label),
            "004 Fig. 7(a): ≈ 0.45× (SSD)" if kind == "storage" else "—",
            f"{label} with access_style=write_mostly ≥ {limit}× {WRITTEN}",
            "78c9a0b",
            headline=headline,
        ),
        f"{base}-write-mostly-lazy": Definition(
            MSTREAM.format(label),
            "004 Fig. 7(a): ≈ 0.45× (SSD)" if kind == "storage" else "—",
            f"{label} with access_style=write_mostly ≥ {limit}× {LAZY}",
            "1e3bc56",
            superseded_by=base,
        ),
        f"{base}-default-lazy": Definition(
            MSTREAM.format(label),
            "004 Fig. 7(a): ≈ 0.45× (SSD)" if kind == "storage" else "—",
            f"{label} with the default hints ≥ {limit}× {LAZY}",
            named,
            superseded_by=f"{base}-write-mostly-lazy",
        ),
    }


def _ooc(ratio, factor, headline=False):
    experiment = OOC.format(ratio)
    return {
        f"ooc-{ratio}-complete": Definition(
            experiment,
            "004 Fig. 10: memory windows fail, storage completes",
            "memory windows fail cleanly (killed in the group), storage and combined windows complete",
            "2d0b6d7",
        ),
        f"ooc-{ratio}-combined": Definition(
            experiment,
            "004 Fig. 10: combined 1.13–1.36× the projection",
            f"combined (half the limit in memory: storage_alloc_factor {factor}) ≤ 1.3× the in-memory "
            "projection, medians of at least 5 interleaved runs",
            "2d0b6d7",
            headline=headline,
        ),
    }


def _nodes(n):
    where = NODES.format(n)
    out = {
        f"rma-{mode}-{n}-ranks": Definition(
            f"IMB-RMA {mode} transfer, {where}: storage / memory window throughput per cell",
            paper,
            RMA_TARGET,
            NODES_NAMED,
        )
        for mode, paper in RMA_PAPER.items()
    }
    dht = f"DHT of {where}, insert time against memory windows, median"
    out[f"dht-storage-{n}-ranks"] = Definition(
        dht, "004 Fig. 9: 1.20× (SSD, one node), 1.02× (Lustre, 4 nodes)", DHT_STORAGE, NODES_NAMED
    )
    out[f"dht-combined-{n}-ranks"] = Definition(dht, "004 Fig. 10: 1.08×", DHT_COMBINED, NODES_NAMED)
    hacc = f"HACC-IO-like checkpoint/restart of {n} × 2 Mi particles in one shared file, {where}, medians"
    out[f"hacc-checkpoint-{n}-ranks"] = Definition(
        hacc,
        "004 Fig. 11: within 2–4 % of MPI-IO (local disk), 32 % better (Lustre, 2 nodes)",
        HACC_CHECKPOINT,
        NODES_NAMED,
    )
    out[f"hacc-restart-{n}-ranks"] = Definition(hacc, "—", HACC_RESTART, NODES_NAMED)
    return out


def _mapreduce():
    out = {}
    for (id, config, named), newer in zip(MR_CHAIN, [None, *MR_CHAIN], strict=False):
        out[id] = Definition(
            MR,
            MR_PAPER,
            f"{config}: ≤ 5 % ({PAIRED.format('5 %')})",
            named,
            id == "mapreduce",
            newer[0] if newer else "",
        )
        out[f"{id}-vs-mr2s"] = Definition(
            MR,
            MR2S_PAPER,
            f"{config}: {VS_MR2S}",
            named,
            superseded_by=f"{newer[0]}-vs-mr2s" if newer else "",
        )
    return out


DEFINITIONS = {
    **_mstream("storage", "0.75", "277dde3", True),
    **_mstream("combined", "0.9", "277dde3", False),
    "rma": Definition(
        "IMB-RMA single transfer, 2 ranks, 1000 iterations: storage / memory window throughput per cell",
        "004 Fig. 5: ≈ 1 %",
        RMA_TARGET,
        "25e56eb",
    ),
    "dht-storage": Definition(DHT, "004 Fig. 9(a): 1.20× (SSD)", DHT_STORAGE, "25e56eb"),
    "dht-combined": Definition(DHT, "004 Fig. 10: 1.08×", DHT_COMBINED, "25e56eb"),
    **_ooc("2.0", "0.75"),
    **_ooc("4.0", "0.875", headline=True),
    "hacc-checkpoint": Definition(
        HACC,
        "004 Fig. 11: within 2–4 % of MPI-IO (local disk)",
        HACC_CHECKPOINT,
        "4fa9470",
        headline=True,
    ),
    "hacc-restart": Definition(
        HACC,
        "—",
        HACC_RESTART,
        "4fa9470",
    ),
    **_mapreduce(),
    "crash": Definition(
        "kill -9 of a rank inside the checkpoint loop, then a restart",
        "—",
        "the restart resumes from the last completed checkpoint with every value verified",
        "25e56eb",
    ),
    **_nodes(4),
    **_nodes(8),
}
PREFIXES = [  # the first words of report.py's target rows, and the id they carry
    ("mSTREAM storage", "mstream-storage"),
    ("mSTREAM combined", "mstream-combined"),
    ("RMA storage", "rma"),
    ("DHT storage", "dht-storage"),
    ("DHT combined", "dht-combined"),
    ("HACC checkpoint", "hacc-checkpoint"),
    ("HACC restart", "hacc-restart"),
    ("MapReduce MR-1S checkpoint overhead", "mapreduce"),
    ("MapReduce MR-1S overhead ≤ 0.5×", "mapreduce-vs-mr2s"),
    ("Crash", "crash"),
]


def _fmt(value, digits=2, unit="×"):
    return "—" if value is None else f"{value:.{digits}f}{unit}"


def _pct(value):
    return "—" if value is None else f"{100 * value:.1f} %"


def _quartiles(r):
    q = r.get("paired_overhead_quartiles") or []
    return " – ".join(_pct(x) for x in q) or "—"


def _verdict(met):
    """report.py's verdict as met: True, False, or None for its "not established (...)" texts."""
    return met if isinstance(met, bool) else None


def _id_of(target):
    for prefix, id in PREFIXES:
        if target.startswith(prefix):
            return id
    words = target.split()  # "Out of core at 2.0× the limit: ..." / "Out of core at 2.0×: combined ..."
    ratio = words[4].rstrip(":×")
    return f"ooc-{ratio}-{'combined' if 'combined ≤' in target else 'complete'}"


def _measured(id, s, t):
    if "short" in t:  # the emulated nodes' rows (nodes_report.py) bring their own
        return t["short"]
    ms, mr = s.get("mstream") or {}, (s.get("mapreduce") or {}).get("table", {})
    if id.startswith("mstream-"):
        kind = id.split("-")[1]
        return _fmt((ms.get("ratio_to_memory") or {}).get(f"{kind} (write_mostly)"))
    if id == "rma":
        o = s["rma"]["overall"]["memory"]
        return f"{o['median_ratio']:.3f} (median of {o['cells']} cells)"
    if id.startswith("dht-"):
        kind = id.removeprefix("dht-")
        return f"{_fmt(s['dht']['ratio_to_memory'].get(kind))} (median of {s['dht']['runs'].get(kind)})"
    if id.startswith("ooc-") and id.endswith("-combined"):
        v = s["ooc"]["ratios"][id.split("-")[1]]["variants"]
        return f"{_fmt(v['combined'].get('ratio_to_projection'))} (storage {_fmt(v['storage'].get('ratio_to_projection'))})"
    if id.startswith("hacc-"):
        r = s["hacc"]["table"]["storage-once"]
        return _fmt(r[f"{id.removeprefix('hacc-')}_to_best_mpiio"])
    if id == "mapreduce":
        r = mr.get(MR_CHAIN[0][1], {})
        return f"{_pct(r.get('paired_overhead'))} paired (quartiles {_quartiles(r)})"
    if id == "mapreduce-vs-mr2s":
        return f"quartiles {_quartiles(mr.get(MR_CHAIN[0][1], {}))}, MR-2S {_quartiles(mr.get('MR-2S', {}))}"
    return t["measured"]


def _superseded(s, paired_verdict):
    """The rows of the replaced definitions this run also measured."""
    out = []
    lazy = (s.get("mstream") or {}).get("ratio_to_memory_lazy") or {}
    for kind, limit in (("storage", 0.75), ("combined", 0.9)):
        for variant, id in ((f"{kind} (write_mostly)", "write-mostly-lazy"), (kind, "default-lazy")):
            if lazy.get(variant) is not None:
                out.append(
                    row(DEFINITIONS, f"mstream-{kind}-{id}", _fmt(lazy[variant]), lazy[variant] >= limit)
                )
    table = (s.get("mapreduce") or {}).get("table", {})
    two = table.get("MR-2S", {})
    q1, q3 = (two.get("paired_overhead_quartiles") or [None, None])[:2]
    for id, config, _ in MR_CHAIN[1:]:
        r = table.get(config)
        if not r or not r.get("paired_overheads"):
            continue
        out.append(
            row(
                DEFINITIONS,
                id,
                f"{_pct(r['paired_overhead'])} paired (quartiles {_quartiles(r)})",
                _verdict(paired_verdict(r, 0.05)),
            )
        )
        if q1 is not None:
            met = _verdict(paired_verdict(r, 0.5 * q1, 0.5 * q3))
            out.append(
                row(DEFINITIONS, f"{id}-vs-mr2s", f"quartiles {_quartiles(r)}, MR-2S {_quartiles(two)}", met)
            )
    return out


def shared_rows(summary, paired_verdict):
    """results.json's "targets": report.py's rows (summary["targets"]) with ids and definitions, then the
    superseded definitions' rows. paired_verdict: report.py's MapReduce rule."""
    out = []
    for t in summary.get("targets", []):
        id = t.get("id") or _id_of(t["target"])  # the emulated nodes' rows carry theirs
        definitions = DEFINITIONS
        if id not in DEFINITIONS:  # a run at another out-of-core ratio than the named ones
            definitions = {id: Definition(t["target"], "—", t["target"], "not named before this run")}
        out.append(row(definitions, id, _measured(id, summary, t), _verdict(t["met"]), detail=t["measured"]))
    return out + _superseded(summary, paired_verdict)
