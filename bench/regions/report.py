#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Turns the JSON of strata-bench-regions into results.md and regions.png.

Usage: report.py RESULTS.json [--out-dir DIR]   (default: the JSON's directory)

The suite measures and names no target (TARGETS): a kind's ratio to malloc is flagged, not judged. The
JSON gets its empty "targets" list (the shape of bench/target_rows.py) so that every suite's results
say what they promise, none included.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from report_plots import save_png  # noqa: E402

TARGETS: list[dict] = []
PATTERNS = ["seq_read", "seq_write", "rand_read", "rand_write"]
PATTERN_TITLES = {
    "seq_read": "sequential read",
    "seq_write": "sequential write",
    "rand_read": "random read",
    "rand_write": "random write",
}


def gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB"


def size_text(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} B"


def fmt_bytes(n: float | None) -> str:
    if n is None or (isinstance(n, float) and math.isnan(n)):
        return "n/a"
    if n >= 1e9:
        return f"{n / 1e9:.2f} GB"
    if n >= 1e6:
        return f"{n / 1e6:.2f} MB"
    if n >= 1e3:
        return f"{n / 1e3:.1f} kB"
    return f"{n:.0f} B"


def fmt_seconds(s: float) -> str:
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.1f} ms"
    return f"{s * 1e6:.0f} µs"


def fmt_ratio(r: float | None) -> str:
    if r is None or math.isnan(r) or math.isinf(r):
        return "n/a"
    return f"{r:.2f}"


def machine_line(doc: dict) -> str:
    m, fs = doc["machine"], doc["storage"]
    return (
        f"{m['cores']} cores, {gib(m['mem_total'])} memory, kernel {m['kernel']}, "
        f"CPU {m['cpu_model']}, transparent huge pages `{m['thp']}`; "
        f"--dir on {fs['type']} ({fs['device']}, mounted at {fs['mount_point']}, "
        f"rotational={fs['rotational'] or '?'})"
    )


def limits_section(doc: dict) -> list[str]:
    lim = doc["limits"]
    rows = [("memcpy, " + size_text(lim["memcpy_bytes"]) + " buffers (bytes copied / s)", lim["memcpy_gbps"])]
    if lim.get("disk_write_gbps"):
        disk = size_text(lim["disk_bytes"])
        rows.append((f"disk write, O_DIRECT + fdatasync, {disk} file", lim["disk_write_gbps"]))
        rows.append((f"disk read, O_DIRECT, {disk} file", lim["disk_read_gbps"]))
    out = [
        "## Physical limits",
        "",
        "| limit | median GB/s | min | max |",
        "| --- | ---: | ---: | ---: |",
    ]
    for name, s in rows:
        out.append(f"| {name} | {s['median']:.2f} | {s['min']:.2f} | {s['max']:.2f} |")
    if not lim.get("disk_write_gbps"):
        out.append("")
        out.append(f"Disk limits not measured: {lim['disk_note']}.")
    out.append("")
    return out


def bandwidth_section(doc: dict) -> list[str]:
    bw = doc["bandwidth"]
    repeats = doc["config"]["repeats"]
    results = {(r["kind"], r["pattern"]): r for r in bw["results"]}
    kinds = [k["kind"] for k in bw["kinds"]]
    memcpy = doc["limits"]["memcpy_gbps"]["median"]
    out = [
        f"## Bandwidth of warm regions (GB/s, median of {repeats}; × malloc)",
        "",
        (
            "The ratio is the median over the repeats of the kind's GB/s over malloc's GB/s in the same repeat"
            " (the two runs are seconds apart, so a machine that slows down for a while slows both)."
        ),
        "",
        "| kind | " + " | ".join(PATTERN_TITLES[p] for p in PATTERNS) + " |",
        "| --- | " + " | ".join("---:" for _ in PATTERNS) + " |",
    ]
    for kind in kinds:
        cells = []
        for p in PATTERNS:
            r = results[(kind, p)]
            cells.append(f"{r['gbps']['median']:.2f} ({r['ratio_to_malloc']['median']:.2f}×)")
        out.append(f"| {kind} | " + " | ".join(cells) + " |")
    out.append(f"| *memcpy (limit)* | {memcpy:.2f} | | | |")
    out += [
        "",
        "What each kind is:",
        "",
    ]
    for k in bw["kinds"]:
        out.append(f"- **{k['kind']}**: {k['label']}")
    out += [
        "",
        (
            "Spread and page faults: min–max GB/s and min–max ratio to malloc over the repeats; page faults in"
            " one timed run, median and max (a warm run should take none):"
        ),
        "",
        "| kind | " + " | ".join(PATTERN_TITLES[p] for p in PATTERNS) + " |",
        "| --- | " + " | ".join("---:" for _ in PATTERNS) + " |",
    ]
    for kind in kinds:
        cells = []
        for p in PATTERNS:
            r = results[(kind, p)]
            q = r["ratio_to_malloc"]
            cells.append(
                f"{r['gbps']['min']:.2f}–{r['gbps']['max']:.2f} ({q['min']:.2f}–{q['max']:.2f}×),"
                f" {r['faults']['median']:.0f} faults (max {r['faults']['max']:.0f})"
            )
        out.append(f"| {kind} | " + " | ".join(cells) + " |")
    out += [
        "",
        (
            "First touch (the warm-up write pass, not part of the numbers above; page faults and, for files,"
            " page-cache allocation included):"
        ),
        "",
        "| kind | GB/s | page faults |",
        "| --- | ---: | ---: |",
    ]
    for k in bw["kinds"]:
        out.append(f"| {k['kind']} | {k['first_touch_gbps']:.2f} | {k['first_touch_faults']} |")
    out.append("")
    return out


def ordered_ratios(ratios: dict) -> list[tuple[str, list[tuple[str, dict]]]]:
    """The ratios of the JSON (whose keys come sorted) as kernel, explicit_sync; spread, contiguous."""
    rank = {"kernel": 0, "explicit_sync": 1, "spread": 0, "contiguous": 1}
    return [
        (wb, sorted(layouts.items(), key=lambda item: rank.get(item[0], 9)))
        for wb, layouts in sorted(ratios.items(), key=lambda item: rank.get(item[0], 9))
    ]


def sync_results(doc: dict) -> list[dict]:
    return doc["sync"]["results"]


def sync_section(doc: dict) -> list[str]:
    sync = doc["sync"]
    repeats = doc["config"]["repeats"]
    out = [
        f"## Cost of `Region::sync()` on a {size_text(sync['region_bytes'])} storage region (median of {repeats})",
        "",
        (
            "Each timed `sync()` follows a `sync()` that left the region clean; in between, one 8-byte store"
            " dirtied each chosen page. *spread*: pages evenly spaced (every 100th page for 1 %);"
            " *contiguous*: the first 1 % or 10 % of the pages. *smaps dirty* is what"
            " `Region::stats().dirty_bytes` reported just before the `sync()`: the bytes the kernel will write."
        ),
        "",
        "| write-back | layout | dirty | bytes stored to | smaps dirty | median | min | max | MB/s of dirty data |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in sync_results(doc):
        s = r["seconds"]
        out.append(
            f"| {r['writeback']} | {r['layout']} | {r['fraction'] * 100:g} % | {fmt_bytes(r['dirty_bytes'])} |"
            f" {fmt_bytes(r['smaps_dirty_bytes'])} | {fmt_seconds(s['median'])} | {fmt_seconds(s['min'])} |"
            f" {fmt_seconds(s['max'])} | {r['mbps']:.0f} |"
        )
    out += [
        "",
        "Proportionality (ideal: 10 and 10; the 100 % point is the one measurement of the whole region):",
        "",
        "| write-back | layout | cost(100 %) / cost(10 %) | cost(10 %) / cost(1 %) | cost(1 %) / cost(0 %) |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    for wb, layouts in ordered_ratios(sync["ratios"]):
        for layout, r in layouts:
            out.append(
                f"| {wb} | {layout} | {fmt_ratio(r['100_over_10'])} | {fmt_ratio(r['10_over_1'])} |"
                f" {fmt_ratio(r['1_over_0'])} |"
            )
    out.append("")
    return out


def findings(doc: dict) -> list[str]:
    """Facts computed from the numbers, so the report flags what a reader must not miss."""
    notes = []
    for r in doc["bandwidth"]["results"]:
        ratio = r["ratio_to_malloc"]
        # Only a difference the noise does not explain: every repeat on the same side of malloc, by 5 % or more.
        if (
            r["kind"] != "malloc"
            and (ratio["min"] > 1 or ratio["max"] < 1)
            and abs(ratio["median"] - 1) >= 0.05
        ):
            notes.append(
                f"{r['kind']} {PATTERN_TITLES[r['pattern']]}: {ratio['median']:.2f}× malloc, and"
                f" {'faster' if ratio['min'] > 1 else 'slower'} than malloc in every repeat"
                f" (paired ratios {ratio['min']:.2f}–{ratio['max']:.2f})."
            )
    for r in doc["bandwidth"]["results"]:
        if r["faults"]["max"] > 0:
            notes.append(
                f"{r['kind']} {PATTERN_TITLES[r['pattern']]}: up to {r['faults']['max']:.0f} page faults in a warm run"
                " (pages were write-protected again, e.g. by kernel write-back, between runs)."
            )
    for r in sync_results(doc):
        smaps = r["smaps_dirty_bytes"]
        if r["dirty_bytes"] > 0 and smaps is not None and smaps > 2 * r["dirty_bytes"]:
            notes.append(
                f"sync {r['writeback']}, {r['layout']} {r['fraction'] * 100:g} %: {fmt_bytes(r['dirty_bytes'])}"
                f" of pages were stored to but the kernel held {fmt_bytes(smaps)} dirty"
                f" ({smaps / r['dirty_bytes']:.0f}×), so sync() wrote that much."
            )
    for wb, layouts in ordered_ratios(doc["sync"]["ratios"]):
        by_layout = dict(layouts)
        spread, contiguous = by_layout["spread"], by_layout.get("contiguous", {})
        exact = all(
            r["smaps_dirty_bytes"] is not None and r["smaps_dirty_bytes"] <= 1.1 * r["dirty_bytes"]
            for r in sync_results(doc)
            if r["writeback"] == wb and r["dirty_bytes"] > 0
        )
        why = (
            "the kernel held only the bytes stored to, so the gap to the contiguous layout is the device's cost"
            " per scattered 4 KiB write"
            if exact
            else "see the smaps dirty column: more bytes were written than were changed"
        )
        for key, label in (("100_over_10", "cost(100 %)/cost(10 %)"), ("10_over_1", "cost(10 %)/cost(1 %)")):
            value = spread[key]
            if value is not None and not math.isnan(value) and value < 3:
                notes.append(
                    f"sync {wb}, spread: {label} = {value:.2f}, far from the 10 of cost ∝ dirty data"
                    f" (contiguous layout: {fmt_ratio(contiguous.get(key))}); {why}."
                )
    return notes


def write_markdown(doc: dict, path: Path, png_name: str) -> None:
    cfg = doc["config"]
    lines = [
        f"# Regions benchmark — {doc['machine']['date_utc'][:10]}",
        "",
        f"Run {doc['machine']['date_utc']} with",
        "",
        "```sh",
        doc["command"],
        "```",
        "",
        f"**Machine:** {machine_line(doc)}.",
        "",
        (
            f"**Setup:** regions of {size_text(cfg['size'])}, {cfg['repeats']} repeats, one thread, page size"
            f" {cfg['page_size']} B. Random = {cfg['random_pattern']}. Units: {cfg['units']}."
        ),
        "",
        (
            "**The numbers are warm:** every page of every region was written and read once before timing,"
            " so storage pages are in the page cache and all pages are mapped. The bandwidth tables measure"
            " how fast the *mappings* are in memory, not the disk; the disk is in *Physical limits* and in"
            " the `sync()` cost."
        ),
        "",
        f"![bandwidth and sync cost]({png_name})",
        "",
    ]
    lines += limits_section(doc)
    lines += bandwidth_section(doc)
    lines += sync_section(doc)
    notes = findings(doc)
    lines += ["## Flagged by the report script", ""]
    if notes:
        lines += [f"- {n}" for n in notes]
    else:
        lines.append(
            "Nothing: no kind differs from malloc beyond the noise, and sync cost follows the dirty data."
        )
    lines += ["", "How to read these numbers: [README.md](README.md).", ""]
    path.write_text("\n".join(lines))


def plot(doc: dict, path: Path) -> None:
    bw = doc["bandwidth"]
    kinds = [k["kind"] for k in bw["kinds"]]
    results = {(r["kind"], r["pattern"]): r for r in bw["results"]}
    fig, (ax_bw, ax_sync) = plt.subplots(1, 2, figsize=(15, 5.8), gridspec_kw={"width_ratios": [1.4, 1]})

    width = 0.8 / len(kinds)
    for i, kind in enumerate(kinds):
        xs = [p + (i - (len(kinds) - 1) / 2) * width for p in range(len(PATTERNS))]
        med = [results[(kind, p)]["gbps"]["median"] for p in PATTERNS]
        lo = [m - results[(kind, p)]["gbps"]["min"] for m, p in zip(med, PATTERNS)]
        hi = [results[(kind, p)]["gbps"]["max"] - m for m, p in zip(med, PATTERNS)]
        ax_bw.bar(xs, med, width, yerr=[lo, hi], capsize=2, label=kind)
    memcpy = doc["limits"]["memcpy_gbps"]["median"]
    ax_bw.axhline(memcpy, color="black", linestyle="--", linewidth=1)
    ax_bw.annotate(
        f"memcpy {memcpy:.1f} GB/s", (len(PATTERNS) - 0.55, memcpy), va="bottom", ha="right", fontsize=8
    )
    ax_bw.set_xticks(range(len(PATTERNS)), [PATTERN_TITLES[p] for p in PATTERNS])
    ax_bw.set_ylabel("GB/s (median, bars min–max)")
    ax_bw.set_title(f"Warm bandwidth, {size_text(doc['config']['size'])} per region, 1 thread")
    ax_bw.legend(fontsize=8, ncol=2)
    ax_bw.grid(axis="y", alpha=0.3)

    region = doc["sync"]["region_bytes"]
    styles = {"kernel": "tab:blue", "explicit_sync": "tab:orange"}
    for wb, color in styles.items():
        for layout, marker, line in (("spread", "o", "-"), ("contiguous", "s", ":")):
            pts = sorted(
                (r["fraction"], r["seconds"]["median"])
                for r in sync_results(doc)
                if r["writeback"] == wb
                and r["fraction"] > 0
                and (r["layout"] == layout or r["fraction"] >= 1)
            )
            if pts:
                ax_sync.plot(*zip(*pts), marker=marker, linestyle=line, color=color, label=f"{wb}, {layout}")
        clean = [
            r["seconds"]["median"] for r in sync_results(doc) if r["writeback"] == wb and r["fraction"] == 0
        ]
        if clean:
            ax_sync.axhline(clean[0], color=color, linewidth=0.8, alpha=0.5)
            ax_sync.annotate(
                f"{wb}, clean: {fmt_seconds(clean[0])}", (0.011, clean[0]), va="bottom", fontsize=7
            )
    disk = doc["limits"].get("disk_write_gbps")
    fractions = [0.01, 0.1, 1.0]
    if disk:
        limit = [f * region / (disk["median"] * 1e9) for f in fractions]
        ax_sync.plot(
            fractions, limit, color="gray", linestyle="--", label="dirty bytes at O_DIRECT write speed"
        )
    ax_sync.set_xscale("log")
    ax_sync.set_yscale("log")
    ax_sync.set_xticks(fractions, ["1 %", "10 %", "100 %"])
    ax_sync.set_xlabel("pages dirtied before sync()")
    ax_sync.set_ylabel("sync() seconds (median)")
    ax_sync.set_title(f"sync() cost, {size_text(region)} storage region")
    ax_sync.legend(fontsize=8)
    ax_sync.grid(which="both", alpha=0.3)

    fig.suptitle(
        f"strata regions benchmark — {doc['machine']['date_utc'][:10]} — {machine_line(doc)}", fontsize=8
    )
    fig.tight_layout()
    save_png(fig, path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="JSON written by strata-bench-regions --json")
    parser.add_argument(
        "--out-dir", type=Path, help="where results.md and regions.png go (default: beside the JSON)"
    )
    args = parser.parse_args()
    doc = json.loads(args.results.read_text())
    if doc.get("targets") != TARGETS:
        doc["targets"] = TARGETS
        args.results.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    out = args.out_dir or args.results.parent
    out.mkdir(parents=True, exist_ok=True)
    write_markdown(doc, out / "results.md", "regions.png")
    plot(doc, out / "regions.png")
    print(f"report: wrote {out / 'results.md'} and {out / 'regions.png'}")


if __name__ == "__main__":
    main()
