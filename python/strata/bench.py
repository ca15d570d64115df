# SPDX-License-Identifier: MIT
"""Benchmark results from Python: the results.json of `strata bench SUITE`.

Every suite writes one results.json (docs/benchmarks/SUITE/ in a source
tree, `--out DIR` elsewhere); each has its own schema for its measurements
and one shared shape for its targets (the list "targets", TARGET_KEYS). load()
reads one into a Results: its target rows (what the suite promised, and
whether the run met it) and its medians, one per configuration and metric,
under names taken from the suite's own keys.

    import strata.bench
    r = strata.bench.load("regions")                     # found as find() says
    r.median("gbps", kind="storage", pattern="seq_read")  # one configuration's median
    [t.name for t in r.missed]                           # targets the run missed
    strata.bench.load("regions", "/tmp/out")             # a `strata bench regions --out /tmp/out` run

Bad input raises ResultsError (a ValueError) naming the parameter, the
value and the cause. Pure Python: it needs no build of the extension.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["ResultsError", "Target", "Median", "Results", "search_path", "suites", "find", "load"]

RESULTS_FILE = "results.json"
# The keys of every row of a results.json's "targets" list (written by bench/<suite>/report.py):
#   id          stable within the suite; a changed definition gets a new id, never an old one's
#   experiment  what is measured, in the report's words
#   paper       the paper's figure or table the target answers, and its value ("—": none)
#   target      the definition, as written before the run that judges it
#   named       the commit that wrote that definition down
#   measured    the judged figure of this run, short
#   met         true, false, or null (not established)
#   headline    one of the at most 12 rows of README.md's headline table (scripts/bench-summary)
# and, optionally, superseded_by: the id of the row whose definition replaced this one (both judged
# on the same run). A row may carry more keys of its suite's own.
TARGET_KEYS = ("id", "experiment", "paper", "target", "named", "measured", "met", "headline")


class ResultsError(ValueError):
    """Benchmark results missing, malformed, or not of the suite asked for."""


@dataclass(frozen=True)
class Target:
    """One target row: `name` states the target as the suite does (its
    definition), `met` whether this run met it (None: not established),
    `measured` what was measured (empty when the suite records no sentence).
    The other fields are those of the shared row shape (TARGET_KEYS); a
    results.json written before it leaves them empty."""

    name: str
    met: bool | None
    measured: str = ""
    id: str = ""
    experiment: str = ""
    paper: str = ""
    named: str = ""
    headline: bool = False
    superseded_by: str = ""


@dataclass(frozen=True)
class Median:
    """The median of `metric` over a configuration's repeats. `config` maps
    the suite's configuration keys (kind, pattern, method, ...) to their
    values; `repeats` is how many runs the median is of (None: not recorded)."""

    config: dict[str, object]
    metric: str
    value: float
    repeats: int | None = None


@dataclass
class Results:
    """One suite's results.json, read. `data` is the whole document as parsed."""

    suite: str
    path: Path
    command: str
    targets: list[Target]
    medians: list[Median]
    data: dict = field(repr=False)

    @property
    def met(self) -> list[Target]:
        """The targets this run met."""
        return [t for t in self.targets if t.met is True]

    @property
    def missed(self) -> list[Target]:
        """The targets this run missed."""
        return [t for t in self.targets if t.met is False]

    def metrics(self) -> list[str]:
        """The metrics that have medians, in the order the suite records them."""
        return list(dict.fromkeys(m.metric for m in self.medians))

    def select(self, metric: str | None = None, **config: object) -> list[Median]:
        """The medians of `metric` (any if None) whose configuration has every
        given key=value."""
        return [
            m
            for m in self.medians
            if (metric is None or m.metric == metric)
            and all(k in m.config and m.config[k] == v for k, v in config.items())
        ]

    def median(self, metric: str, **config: object) -> float:
        """The one median of `metric` in the configuration `config`; ResultsError
        when none or several match.

        >>> import json, os, tempfile, strata.bench
        >>> out = tempfile.mkdtemp()
        >>> row = {"kind": "storage", "pattern": "seq_read", "gbps": {"median": 1.5, "samples": [1.4, 1.5, 1.6]}}
        >>> doc = {"suite": "regions", "command": "strata bench regions", "bandwidth": {"results": [row]}}
        >>> _ = open(os.path.join(out, "results.json"), "w").write(json.dumps(doc))
        >>> r = strata.bench.load("regions", out)
        >>> r.median("gbps", kind="storage", pattern="seq_read")
        1.5
        >>> r.select("gbps")[0].repeats
        3
        >>> r.median("gbps", kind="memory")
        Traceback (most recent call last):
        ...
        strata.bench.ResultsError: config={'kind': 'memory'}: no median of gbps in ... (configurations: ...)
        """
        found = self.select(metric, **config)
        if len(found) == 1:
            return found[0].value
        if not found:
            known = "; ".join(sorted({repr(m.config) for m in self.select(metric)})) or "none"
            raise ResultsError(
                f"config={config!r}: no median of {metric} in {self.path} (configurations: {known})"
            )
        raise ResultsError(
            f"config={config!r}: {len(found)} medians of {metric} in {self.path} match; "
            f"name more keys (e.g. {found[0].config!r})"
        )


# --- where results live ----------------------------------------------------------------------


def search_path() -> list[Path]:
    """The directories searched for SUITE/results.json, first match wins:
    $STRATA_BENCH_RESULTS (os.pathsep-separated), docs/benchmarks of the
    source tree holding the current directory, docs/benchmarks of the source
    tree this package was built in (a build tree's package), and the
    installed reports, share/doc/strata/benchmarks of the prefix of the
    `strata` command on PATH and of sys.prefix."""
    dirs: list[Path] = [Path(p) for p in os.environ.get("STRATA_BENCH_RESULTS", "").split(os.pathsep) if p]
    for start in (Path.cwd(), Path(__file__).resolve().parent):
        for parent in (start, *start.parents):
            if (parent / "docs" / "benchmarks").is_dir() and (parent / "bench").is_dir():
                dirs.append(parent / "docs" / "benchmarks")
                break
    command = shutil.which("strata")
    if command:
        dirs.append(Path(command).resolve().parent.parent / "share" / "doc" / "strata" / "benchmarks")
    dirs.append(Path(sys.prefix) / "share" / "doc" / "strata" / "benchmarks")
    return list(dict.fromkeys(d for d in dirs if d.is_dir()))


def suites(where: str | os.PathLike | None = None) -> list[str]:
    """The suites with results in `where` (a directory of SUITE/ directories),
    or in every directory of search_path()."""
    roots = search_path() if where is None else [Path(where)]
    return sorted(
        {d.name for root in roots if root.is_dir() for d in root.iterdir() if (d / RESULTS_FILE).is_file()}
    )


def find(suite: str, where: str | os.PathLike | None = None) -> Path:
    """The results.json of `suite`. `where`: a `strata bench SUITE --out DIR`
    directory (holding results.json) or a directory of SUITE/ directories;
    None searches search_path()."""
    if not suite or os.sep in suite or suite.startswith("."):
        raise ResultsError(f"suite={suite!r}: not a suite name (see strata bench --list)")
    if where is not None:
        root = Path(where)
        if not root.is_dir():
            raise ResultsError(f"where={os.fspath(where)!r}: no such directory")
        for candidate in (root / RESULTS_FILE, root / suite / RESULTS_FILE):
            if candidate.is_file():
                return candidate
        raise ResultsError(
            f"where={os.fspath(where)!r}: holds neither {RESULTS_FILE} nor {suite}/{RESULTS_FILE} "
            f"(a `strata bench {suite} --out DIR` directory, or a directory of suites)"
        )
    roots = search_path()
    for root in roots:
        if (root / suite / RESULTS_FILE).is_file():
            return root / suite / RESULTS_FILE
    known = ", ".join(suites()) or "none"
    searched = ", ".join(map(str, roots)) or "no directory (set STRATA_BENCH_RESULTS)"
    raise ResultsError(
        f"suite={suite!r}: no results found (searched {searched}; suites with results: {known})"
    )


def load(suite: str, where: str | os.PathLike | None = None) -> Results:
    """Reads the results of `suite` (found as find() says) into a Results.
    `suite` may also name a report directory holding a run of another suite
    (Results.suite is then the suite the file records). ResultsError when
    they are missing, not JSON, or of another suite."""
    path = find(suite, where)
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError) as e:
        raise ResultsError(f"path={str(path)!r}: cannot read it: {e}") from e
    except json.JSONDecodeError as e:
        raise ResultsError(f"path={str(path)!r}: not JSON: {e}") from e
    if not isinstance(data, dict):
        raise ResultsError(f"path={str(path)!r}: expected a JSON object, found a {type(data).__name__}")
    # A report may live under another name than its suite's (a side run kept under its own name holds a
    # run of its suite): asked for by that directory's name, it is read as its suite's results.
    recorded = data.get("suite")
    if isinstance(recorded, str) and recorded != suite and path.parent.name != suite:
        raise ResultsError(f"suite={suite!r}: {path} holds the results of the suite {recorded!r}")
    suite = recorded if isinstance(recorded, str) else suite
    try:
        medians = list(_MEDIANS.get(suite, _generic_medians)(data))
    except (KeyError, TypeError, AttributeError, ValueError) as e:
        raise ResultsError(
            f"path={str(path)!r}: not the schema of the {suite} suite: {type(e).__name__} {e}"
        ) from e
    rows = data.get("targets")
    targets = _shared_targets(rows, path) if isinstance(rows, list) else list(_targets(data))
    return Results(
        suite=suite,
        path=path,
        command=_command(data),
        targets=targets,
        medians=medians,
        data=data,
    )


# --- reading each suite's schema -------------------------------------------------------------


def _command(data: dict) -> str:
    """The command that produced the results; a suite run in parts (storage-windows' meta) gives each
    part's, joined by "; "."""
    for where in (data, data.get("config"), data.get("summary")):
        if isinstance(where, dict) and isinstance(where.get("command"), str):
            return where["command"]
    parts = data.get("meta")
    if isinstance(parts, dict):
        commands = (p.get("command") for p in parts.values() if isinstance(p, dict))
        return "; ".join(dict.fromkeys(c for c in commands if isinstance(c, str)))
    return ""


def _shared_targets(rows: list, path: Path) -> list[Target]:
    """The "targets" list in the shared row shape (TARGET_KEYS); ResultsError naming the first bad row. A list
    of rows without ids is an older document's: read like any other target rows anywhere in it."""
    if rows and all(isinstance(r, dict) and "id" not in r for r in rows):
        return list(_targets(rows))
    types = {"met": (bool, type(None)), "headline": (bool,)}
    targets, ids = [], set()
    for i, r in enumerate(rows):
        where = f"path={str(path)!r}: targets[{i}]"
        if not isinstance(r, dict):
            raise ResultsError(f"{where}: expected an object, found a {type(r).__name__}")
        missing = [k for k in TARGET_KEYS if k not in r]
        if missing:
            raise ResultsError(
                f"{where}: missing {', '.join(missing)} (every row has {', '.join(TARGET_KEYS)})"
            )
        for key in (*TARGET_KEYS, "superseded_by"):
            if key in r and not isinstance(r[key], types.get(key, (str,))):
                expected = " or ".join(
                    "null" if t is type(None) else t.__name__ for t in types.get(key, (str,))
                )
                raise ResultsError(f"{where}: {key}={r[key]!r}: expected {expected}")
        if not r["id"] or r["id"] in ids:
            raise ResultsError(
                f"{where}: id={r['id']!r}: {'empty' if not r['id'] else 'used by an earlier row'}"
            )
        ids.add(r["id"])
        targets.append(
            Target(
                name=r["target"],
                met=r["met"],
                measured=r["measured"],
                id=r["id"],
                experiment=r["experiment"],
                paper=r["paper"],
                named=r["named"],
                headline=r["headline"],
                superseded_by=r.get("superseded_by", ""),
            )
        )
    return targets


def _targets(node: object) -> Iterator[Target]:
    """Every {"target": str, "met": bool, ...} anywhere in the document (a results.json written before the
    shared "targets" list: storage-windows' summary.targets, video's verdicts, ...)."""
    if isinstance(node, dict):
        if isinstance(node.get("target"), str) and "met" in node:
            met, measured = node["met"], node.get("measured", "")
            measured = measured if isinstance(measured, str) else ""
            if not isinstance(met, bool):  # e.g. "not established (baseline spread 97.9%)"
                measured = f"{measured} ({met})" if measured else str(met)
                met = None
            yield Target(node["target"], met, measured)
            return
        for value in node.values():
            yield from _targets(value)
    elif isinstance(node, list):
        for value in node:
            yield from _targets(value)


def _stat(value: object) -> tuple[float, int | None] | None:
    """A {"median": x, "samples": [...]} statistic as (median, repeats)."""
    if isinstance(value, dict) and isinstance(value.get("median"), int | float):
        samples = value.get("samples")
        return float(value["median"]), len(samples) if isinstance(samples, list) else None
    return None


def _rows_with_stats(rows: list, config_keys: tuple[str, ...]) -> Iterator[Median]:
    for row in rows:
        config = {k: row[k] for k in config_keys}
        for metric, value in row.items():
            stat = _stat(value)
            if stat is not None:
                yield Median(config, metric, *stat)


def _columns(table: dict, key: str, metrics: tuple[str, ...], repeats: int | None = None) -> Iterator[Median]:
    """{config value: {metric: median, ...}} tables (storage-windows, video)."""
    for name, row in table.items():
        for metric in metrics:
            if isinstance(row.get(metric), int | float):
                yield Median({key: name}, metric, float(row[metric]), row.get("runs", repeats))


def _regions(data: dict) -> Iterator[Median]:
    yield from _rows_with_stats(data["bandwidth"]["results"], ("kind", "pattern"))
    yield from _rows_with_stats(data.get("sync", {}).get("results", []), ("writeback", "layout", "fraction"))
    for metric, value in data.get("limits", {}).items():
        stat = _stat(value)
        if stat is not None:
            yield Median({}, metric, *stat)


def _shm_handoff(data: dict) -> Iterator[Median]:
    for row in data["results"]:
        config = {k: row[k] for k in ("method", "size", "touched")}
        for metric in ("p50_us", "p90_us", "p99_us", "p999_us"):
            yield Median(config, metric, float(row[metric]), len(row.get("p50_us_per_repeat", [])) or None)


def _shared_objects(data: dict) -> Iterator[Median]:
    keys = ("experiment", "shape", "tasks", "method", "wait", "data_size")
    for row in data["workflows"]:
        config = {k: row[k] for k in keys if k in row}
        for metric in ("throughput_mb_s", "iterations_per_s", "handoff_p50_ns"):
            if isinstance(row.get(metric), int | float):
                yield Median(config, metric, float(row[metric]), row.get("repeats"))


def _umt(data: dict) -> Iterator[Median]:
    for row in data["summary"]:
        config = {k: row[k] for k in ("experiment", "label", "throttle", "mode")}
        for key, value in row.items():
            if key.endswith("_median") and isinstance(value, int | float):
                yield Median(config, key.removesuffix("_median"), float(value), row.get("repeats"))


def _grouped(samples: list, keys: tuple[str, ...], metric: str) -> Iterator[Median]:
    groups: dict[tuple, list[float]] = {}
    for s in samples:
        groups.setdefault(tuple(s[k] for k in keys), []).append(float(s[metric]))
    for values_key, values in groups.items():
        yield Median(dict(zip(keys, values_key, strict=True)), metric, statistics.median(values), len(values))


def _external(data: dict) -> Iterator[Median]:
    yield from _grouped(data["samples"], ("config", "kind"), "seconds")
    if "launch" in data:
        yield from _grouped(data["launch"]["samples"], ("config",), "seconds_per_task")


def _storage_windows(data: dict) -> Iterator[Median]:
    summary = data["summary"]
    for window, patterns in summary["mstream"]["table"].items():
        for pattern, row in patterns.items():
            for metric in ("gbps", "flush_share"):
                yield Median({"window": window, "pattern": pattern}, f"mstream_{metric}", float(row[metric]))
    for app, metrics in (
        ("dht", ("seconds",)),
        ("hacc", ("checkpoint_seconds", "restart_seconds")),
        ("mapreduce", ("seconds_no_checkpoint", "seconds_checkpoint")),
    ):
        if isinstance(summary.get(app), dict):
            for m in _columns(summary[app]["table"], "variant", metrics):
                yield Median(m.config, f"{app}_{m.metric}", m.value, m.repeats)


def _video(data: dict) -> Iterator[Median]:
    for size, summary in data["summary"].items():
        for impl, row in summary["impls"].items():
            if isinstance(row.get("job_s"), int | float):
                yield Median({"size": size, "impl": impl}, "job_s", float(row["job_s"]), row.get("runs"))


def _ocr_dist(data: dict) -> Iterator[Median]:
    repeats = data.get("repeats")
    for row in data["roundtrip"]:
        for metric in ("ocr_us", "mpi_us"):
            yield Median(
                {"bytes": row["bytes"]}, f"roundtrip_{metric}", float(row[f"{metric}_median"]), repeats
            )
    for row in data["migration"]:
        for metric in ("ocr_mbps", "mpi_mbps"):
            yield Median(
                {"bytes": row["bytes"]}, f"migration_{metric}", float(row[f"{metric}_median"]), repeats
            )
    for row in data["stencil"]:
        for metric in ("ocr_mpoints_per_s", "mpi_mpoints_per_s"):
            yield Median({"ranks": row["ranks"]}, f"stencil_{metric}", float(row[metric]), repeats)


def _containers(data: dict) -> Iterator[Median]:
    for row in data["rows"]:
        yield Median(
            {"shape": row["shape"], "n": row["n"], "mode": row["mode"]},
            "throughput_mb_s",
            float(row["throughput_mb_s"]),
            row.get("repeats"),
        )


def _mpich_rma_conformance(data: dict) -> Iterator[Median]:
    """A conformance table: per mode, the median run time of the tests that passed in it (each
    test ran once per mode), so a mode's overhead on MPICH's own tests can be read beside plain."""
    for mode in data.get("modes", []):
        seconds = [
            float(run["seconds"])
            for test in data.get("tests", [])
            if (run := test.get("modes", {}).get(mode)) and run.get("outcome") == "pass"
        ]
        if seconds:
            yield Median({"mode": mode}, "seconds", statistics.median(seconds), len(seconds))


def _generic_medians(data: dict) -> Iterator[Median]:
    """A suite without a reader here: every {"median": ...} statistic, its configuration the string
    and boolean fields beside it."""

    def walk(node: object, path: tuple[str, ...]) -> Iterator[Median]:
        if isinstance(node, dict):
            config = {k: v for k, v in node.items() if isinstance(v, str | bool)}
            for key, value in node.items():
                stat = _stat(value)
                if stat is not None:
                    yield Median(config or {"at": "/".join(path)}, key, *stat)
                elif isinstance(value, dict | list):
                    yield from walk(value, (*path, key))
        elif isinstance(node, list):
            for i, value in enumerate(node):
                yield from walk(value, (*path, str(i)))

    return walk(data, ())


_MEDIANS: dict[str, Callable[[dict], Iterator[Median]]] = {
    "regions": _regions,
    "shm_handoff": _shm_handoff,
    "shared-objects": _shared_objects,
    "umt": _umt,
    "external": _external,
    "storage-windows": _storage_windows,
    "video": _video,
    "ocr-dist": _ocr_dist,
    "containers": _containers,
    "mpich-rma-conformance": _mpich_rma_conformance,
}
