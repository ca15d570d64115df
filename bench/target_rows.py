# SPDX-License-Identifier: MIT
"""Target rows in the one shape every suite's results.json carries as its list "targets".

Each bench/<suite>/report.py holds its targets as Definitions, each written down before the run that
judges it, and writes one row per target it judged:

    DEFINITIONS = {"fast-path": Definition("reads", "000 Table 1: ...", "<= 1.2x tmpfs", "d825db5")}
    doc["targets"] = [row(DEFINITIONS, "fast-path", "1.10x", True)]

python/strata/bench.py reads the rows (TARGET_KEYS says what each key means) and scripts/bench-summary
makes docs/benchmarks/README.md and README.md's headline figures of them. A definition is never edited
once a run was judged on it: a changed definition is a new entry with a new id, and the old one stays
(with superseded_by) as long as the run still measures it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Definition:
    experiment: str  # what is measured, in the report's words
    paper: str  # the paper's figure or table and its value, "—" when the paper has none
    target: str  # the definition: threshold, figure and the configuration judged
    named: str  # the commit that wrote the definition down, before the run
    headline: bool = False  # one of README.md's at most 12 headline figures
    superseded_by: str = ""  # the id of the definition that replaced this one


def row(definitions: dict[str, Definition], id: str, measured: str, met: bool | None, **extra) -> dict:
    """The results.json row of target `id` judged `met` (None: not established) on `measured`; `extra`:
    keys of the suite's own, after the shared ones."""
    d = definitions[id]
    out = {
        "id": id,
        "experiment": d.experiment,
        "paper": d.paper,
        "target": d.target,
        "named": d.named,
        "measured": measured,
        "met": met,
        "headline": d.headline,
    }
    if d.superseded_by:
        out["superseded_by"] = d.superseded_by
    return out | extra
