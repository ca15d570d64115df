# SPDX-License-Identifier: MIT
"""Turns strata-bench-shm-kills' JSON into results.json and results.md, and judges the targets of
issue 28 ("Ports heal").

    report.py RAW --out-dir DIR [--command CMD] [--load-start L] [--load-end L]

RAW may be a results.json written before: it keeps its command, date, machine and load averages, so
the report regenerates byte for byte."""

import argparse
import datetime
import json
import os
import platform
import re
import statistics
import subprocess
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from target_rows import Definition  # noqa: E402
from target_rows import row as target_row  # noqa: E402

EXPERIMENT = "SIGKILL of a producer or consumer of a port in use, at a random moment"
SHAPES = "1-2 producers, 1-2 consumers, 1 and 4 slots, blocking and busy-poll"
DEFINITIONS = {
    "no-broken": Definition(
        EXPERIMENT,
        "—",
        f"0 ports broken in 2,000 kills ({SHAPES}), and every port opens again after the run",
        "c1852aa",
    ),
    "named": Definition(
        EXPERIMENT,
        "—",
        "every survivor's first error is peer_dead and names the killed process's pid",
        "c1852aa",
    ),
    "exactly-once": Definition(
        EXPERIMENT,
        "—",
        "every message committed before the kill received exactly once, in order, by every surviving "
        "consumer; the victim's message in flight by all of them or none; no message never sent",
        "c1852aa",
    ),
    "every-round": Definition(
        EXPERIMENT,
        "—",
        "every round passes every check above and every survivor ends by itself (no hang)",
        "c1852aa",
    ),
}


def machine():
    cpu = ""
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        cpu = next((line.split(":", 1)[1].strip() for line in lscpu.splitlines() if "Model name" in line), "")
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "kernel": platform.release()}


def repair_kind(text):
    """A repair with its numbers taken out ("loan of message N undone")."""
    return re.sub(r"\d+", "N", text)


def summarize(rounds):
    survivors = sum(r["survivors"] for r in rounds)
    errors = sorted(r["first_error_ms"] for r in rounds if r["first_error_ms"] >= 0)
    last = sorted(r["last_error_ms"] for r in rounds if r["last_error_ms"] >= 0)
    return {
        "rounds": len(rounds),
        "producers_killed": sum(r["victim"].startswith("producer") for r in rounds),
        "consumers_killed": sum(r["victim"].startswith("consumer") for r in rounds),
        "widened": sum(r["widen"] for r in rounds),
        "in_lock": sum(r["in_lock"] for r in rounds),
        "broken": sum(r["broken"] for r in rounds),
        "survivors": survivors,
        "named": sum(r["named"] for r in rounds),
        "committed": sum(r["committed"] for r in rounds),
        "delivered": sum(r["delivered"] for r in rounds),
        "in_flight_delivered": sum(r["in_flight_delivered"] > 0 for r in rounds),
        "lost": sum(r["lost"] for r in rounds),
        "duplicated": sum(r["duplicated"] for r in rounds),
        "out_of_order": sum(r["out_of_order"] for r in rounds),
        "phantom": sum(r["phantom"] for r in rounds),
        "failed": sum(bool(r["failure"]) for r in rounds),
        "first_error_ms_median": statistics.median(errors) if errors else None,
        "last_error_ms_max": max(last) if last else None,
    }


def shapes(rounds):
    """Per shape, the median times from the kill to the first and the last survivor's error."""
    out = []
    for name in dict.fromkeys(r["config"] for r in rounds):
        first = [r["first_error_ms"] for r in rounds if r["config"] == name and r["first_error_ms"] >= 0]
        last = [r["last_error_ms"] for r in rounds if r["config"] == name and r["last_error_ms"] >= 0]
        row = {"shape": name}
        if first:
            row["first_error_ms"] = {"median": statistics.median(first), "rounds": len(first)}
            row["last_error_ms"] = {"median": statistics.median(last), "rounds": len(last)}
        out.append(row)
    return out


def judge(doc):
    s = doc["summary"]
    reopen = doc["ports_reopen_error"]
    asked = doc["rounds_asked"]
    complete = s["rounds"] == asked
    broken = f"{s['broken']} broken in {s['rounds']} kills" + (
        f"; reopening failed: {reopen}" if reopen else ""
    )
    return [
        target_row(DEFINITIONS, "no-broken", broken, s["broken"] == 0 and not reopen and s["rounds"] >= 2000),
        target_row(
            DEFINITIONS, "named", f"{s['named']} of {s['survivors']} survivors", s["named"] == s["survivors"]
        ),
        target_row(
            DEFINITIONS,
            "exactly-once",
            f"{s['lost']} lost, {s['duplicated']} twice, {s['out_of_order']} out of order, {s['phantom']} never "
            f"sent, of {s['committed']} committed",
            s["lost"] + s["duplicated"] + s["out_of_order"] + s["phantom"] == 0,
        ),
        target_row(
            DEFINITIONS,
            "every-round",
            f"{s['failed']} of {s['rounds']} rounds failed",
            s["failed"] == 0 and complete,
        ),
    ]


def ms(value):
    return "—" if value is None else f"{value:.1f} ms"


def config_rows(rounds):
    by = {}
    for r in rounds:
        by.setdefault(r["config"], []).append(r)
    lines = [
        "| shape | rounds | producers killed | kills holding the lock | broken | survivors named | committed | "
        "lost / twice | failed |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, rs in by.items():
        s = summarize(rs)
        lines.append(
            f"| {name} | {s['rounds']} | {s['producers_killed']} | {s['in_lock']} | {s['broken']} | "
            f"{s['named']} / {s['survivors']} | {s['committed']} | {s['lost']} / {s['duplicated']} | {s['failed']} |"
        )
    return lines


def markdown(doc):
    s = doc["summary"]
    verdict = {True: "met", False: "**missed**", None: "not established"}
    out = [
        "# Ports that heal: SIGKILLs at random moments",
        "",
        "<!-- generated by bench/shm-kills/report.py from results.json: edit that, not this -->",
        "",
        f"Command: `{doc['command']}`. Run {doc['date']} on {doc['machine']['cpu']}, "
        f"{doc['machine']['cores']} cores, Linux {doc['machine']['kernel']}; load average {doc['load_start']} at "
        f"the start, {doc['load_end']} at the end. Seed {doc['seed']}, kills within {doc['max_delay_us']} µs of "
        "the start.",
        "",
        f"{s['rounds']} kills ({s['producers_killed']} producers, {s['consumers_killed']} consumers), "
        f"{s['in_lock']} of them while the victim held the port's lock ({s['widened']} rounds paused inside the "
        f"critical sections); {s['broken']} rounds in which a survivor found the port broken; {s['named']} of {s['survivors']} survivors were "
        f"told which peer died; {s['committed']} messages committed in the rounds (before and after the kills), "
        f"{s['delivered']} receptions by surviving consumers, {s['lost']} messages lost and {s['duplicated']} "
        f"delivered twice; {s['failed']} rounds failed.",
        "",
        "## Targets",
        "",
        "| target | measured | verdict |",
        "|---|---|---|",
    ]
    for t in doc["targets"]:
        out.append(f"| {t['target']} (named in {t['named']}) | {t['measured']} | {verdict[t['met']]} |")
    out += ["", "## By shape", ""] + config_rows(doc["rounds"])
    repairs = Counter()
    for r in doc["rounds"]:
        for part in filter(None, (p.strip() for p in r["repaired"].split(", "))):
            repairs[repair_kind(part)] += 1
    out += ["", "## What the survivors repaired after a holder of the lock died", ""]
    out += ["| repair | rounds |", "|---|---|"]
    out += [f"| {kind} | {n} |" for kind, n in sorted(repairs.items(), key=lambda kv: (-kv[1], kv[0]))]
    out += [
        "",
        "## Time to the error",
        "",
        f"From the kill to the first survivor's error: median {ms(s['first_error_ms_median'])}; to the last "
        f"survivor's, at most {ms(s['last_error_ms_max'])} (blocking waits check their peers every ~20 ms; the "
        "machine's load counts in these times, which are no target).",
    ]
    failures = [r for r in doc["rounds"] if r["failure"]]
    if failures:
        out += ["", "## Failed rounds", "", "| round | shape | victim | failure |", "|---|---|---|---|"]
        out += [f"| {r['index']} | {r['config']} | {r['victim']} | {r['failure']} |" for r in failures[:50]]
    return "\n".join(out) + "\n"


def dump(doc):
    """results.json with one line per round (2,000 rounds stay readable and diffable)."""
    head = json.dumps({k: v for k, v in doc.items() if k != "rounds"}, indent=1)
    rows = ",\n".join("  " + json.dumps(r, separators=(",", ":")) for r in doc["rounds"])
    return f'{head[:-2]},\n "rounds": [\n{rows}\n ]\n}}\n'


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("raw")
    parser.add_argument("--out-dir", required=True)
    parser.add_argument("--command", default="bench/shm-kills/run")
    parser.add_argument("--load-start", default="")
    parser.add_argument("--load-end", default="")
    args = parser.parse_args()
    with open(args.raw) as f:
        doc = json.load(f)
    if "summary" not in doc:  # the harness' output: record how and where it ran
        doc = {
            "command": args.command,
            "date": datetime.date.today().isoformat(),
            "machine": machine(),
            "load_start": args.load_start,
            "load_end": args.load_end,
        } | doc
    doc["summary"] = summarize(doc["rounds"])
    doc["shapes"] = shapes(doc["rounds"])
    doc["failed_rounds"] = doc["summary"]["failed"]
    doc["targets"] = judge(doc)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(dump(doc))
    (out / "results.md").write_text(markdown(doc))


if __name__ == "__main__":
    main()
