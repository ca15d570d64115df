# SPDX-License-Identifier: MIT
"""strata.bench reads benchmark results: the committed reports and a fresh `strata bench regions --out DIR` run."""

import ast
import doctest
import inspect
import json
import os
import subprocess
from pathlib import Path

import pytest
from capability import require
from conftest import REPO

REPORTS = REPO / "docs" / "benchmarks"
COMMITTED = sorted(p.parent.name for p in REPORTS.glob("*/results.json"))
# Reports of counts (kills survived), not of timed repeats: they have targets and no medians.
COUNTS_ONLY = {"checkpoint-kills"}


@pytest.fixture
def bench(strata_module, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # outside the source tree: only what the test names is found
    monkeypatch.delenv("STRATA_BENCH_RESULTS", raising=False)
    return strata_module.bench


def test_every_committed_report_loads_with_its_command_and_medians(bench):
    assert len(COMMITTED) >= 7, COMMITTED  # the test can fail by finding nothing
    for suite in COMMITTED:
        sut = bench.load(suite, REPORTS)
        recorded = json.loads((REPORTS / suite / "results.json").read_text()).get("suite", suite)
        assert sut.suite == recorded  # a side run under its own name records its suite
        assert sut.path == REPORTS / suite / "results.json"
        assert sut.command, f"{suite}: no command"
        if suite in COUNTS_ONLY:
            assert sut.targets, f"{suite}: a report of counts without targets"
        else:
            assert sut.medians, f"{suite}: no medians"
        assert all(isinstance(m.value, float) for m in sut.medians)


def test_targets_are_the_reports_target_rows_with_met_and_missed(bench):
    doc = json.loads((REPORTS / "storage-windows" / "results.json").read_text())
    raw = doc["targets"]
    sut = bench.load("storage-windows", REPORTS)
    assert [(t.id, t.name, t.measured, t.named) for t in sut.targets] == [
        (r["id"], r["target"], r["measured"], r["named"]) for r in raw
    ]
    assert len(sut.met) == sum(r["met"] is True for r in raw) > 0
    assert len(sut.missed) == sum(r["met"] is False for r in raw) > 0
    undecided = [t for t in sut.targets if t.met is None]
    assert len(undecided) == sum(r["met"] is None for r in raw) > 0
    # The verdicts are report.py's own rows (results.md's table), which the shared rows carry as "detail".
    judged = [r for r in raw if "detail" in r and not r.get("superseded_by")]
    assert len(judged) == len(doc["summary"]["targets"])
    for shared, row in zip(judged, doc["summary"]["targets"], strict=True):
        assert shared["detail"] == row["measured"]
        assert shared["met"] is (row["met"] if isinstance(row["met"], bool) else None)


def test_every_committed_report_carries_its_targets_in_the_shared_shape(bench):
    for suite in COMMITTED:
        doc = json.loads((REPORTS / suite / "results.json").read_text())
        assert isinstance(doc.get("targets"), list), f"{suite}: no targets list"
        sut = bench.load(suite, REPORTS)
        assert [t.id for t in sut.targets] == [r["id"] for r in doc["targets"]]
        assert all(t.named and t.experiment and t.paper and t.measured for t in sut.targets), suite
        replaced = {t.superseded_by for t in sut.targets} - {""}
        assert replaced <= {t.id for t in sut.targets}, f"{suite}: superseded by a row it does not have"


def test_umts_targets_are_the_rows_of_its_markdown_reports_targets_table(bench):
    # bench/umt/report.py writes the same rows into results.md and results.json; this fails when one of them
    # is edited or regenerated without the other.
    text = (REPORTS / "umt" / "results.md").read_text()
    table = text[text.index("## Targets") :].split("\n\n")[2]
    rows = [line.split(" | ") for line in table.splitlines()[2:]]
    raw = json.loads((REPORTS / "umt" / "results.json").read_text())["targets"]
    judged = [r for r in raw if "detail" in r and not r.get("superseded_by")]
    sut = {t.id: t for t in bench.load("umt", REPORTS).targets}
    assert len(judged) == len(rows) >= 7
    for r, (name, measured, met) in zip(judged, rows, strict=True):
        assert name.removeprefix("| ") == r["detail"]
        assert measured == sut[r["id"]].measured
        assert sut[r["id"]].met is (met.removesuffix(" |") == "yes")
    # The definitions a later one replaced keep their rows beside, judged on the same run, naming a row
    # of it: the compute-kernel definitions and, in the runs that measure ebpf+idle+standby (the tenth and
    # eleventh rounds), the ones named on that mode.
    replaced = {t.superseded_by for t in sut.values()} - {""}
    assert replaced <= set(sut)
    assert {"default-speedup-to-bound", "default-utilization"} <= replaced
    if "ebpf+idle+standby" in json.loads((REPORTS / "umt" / "results.json").read_text())["settings"]["modes"]:
        assert "default-oversubscription" in replaced


def test_shared_target_rows_that_break_the_shape_are_named(bench, tmp_path):
    good = {
        "id": "x",
        "experiment": "e",
        "paper": "—",
        "target": "≤ 1",
        "named": "abc1234",
        "measured": "0.5",
        "met": True,
        "headline": False,
    }
    cases = [
        ([{k: v for k, v in good.items() if k != "named"}], r"targets\[0\]: missing named"),
        ([good, good], r"targets\[1\]: id='x': used by an earlier row"),
        ([good | {"met": "yes"}], r"targets\[0\]: met='yes': expected bool or null"),
        ([good | {"headline": None}], r"targets\[0\]: headline=None: expected bool"),
        ([good, 3], r"targets\[1\]: expected an object, found a int"),
    ]
    for rows, message in cases:
        (tmp_path / "results.json").write_text(json.dumps({"suite": "mine", "targets": rows}))
        with pytest.raises(bench.ResultsError, match=message):
            bench.load("mine", tmp_path)
    (tmp_path / "results.json").write_text(json.dumps({"suite": "mine", "targets": []}))
    assert bench.load("mine", tmp_path).targets == []
    (tmp_path / "results.json").write_text(
        json.dumps({"suite": "mine", "targets": [{"target": "t", "met": False}]})
    )
    assert [(t.name, t.met, t.id) for t in bench.load("mine", tmp_path).targets] == [("t", False, "")]


def test_a_configurations_median_is_the_value_the_report_records(bench):
    rows = json.loads((REPORTS / "regions" / "results.json").read_text())["bandwidth"]["results"]
    sut = bench.load("regions", REPORTS)
    for row in rows:
        assert sut.median("gbps", kind=row["kind"], pattern=row["pattern"]) == row["gbps"]["median"]
    handoff = json.loads((REPORTS / "shm_handoff" / "results.json").read_text())["results"][0]
    config = {k: handoff[k] for k in ("method", "size", "touched")}
    assert bench.load("shm_handoff", REPORTS).median("p50_us", **config) == handoff["p50_us"]


def test_the_search_path_finds_the_source_trees_reports(bench, monkeypatch):
    monkeypatch.chdir(REPO / "docs")
    assert REPORTS in bench.search_path()
    assert set(COMMITTED) <= set(bench.suites())
    assert bench.find("regions") == REPORTS / "regions" / "results.json"


def test_strata_bench_results_names_where_to_search(bench, monkeypatch, tmp_path):
    (tmp_path / "reports" / "mine").mkdir(parents=True)
    (tmp_path / "reports" / "mine" / "results.json").write_text(
        '{"suite": "mine", "x": {"median": 2, "samples": [1, 2, 3]}}'
    )
    monkeypatch.setenv("STRATA_BENCH_RESULTS", str(tmp_path / "reports"))
    sut = bench.load("mine")
    assert (sut.median("x"), sut.select("x")[0].repeats) == (2.0, 3)


def test_an_unknown_suite_names_the_suite_and_what_was_searched(bench, monkeypatch):
    monkeypatch.setenv("STRATA_BENCH_RESULTS", str(REPORTS))
    with pytest.raises(
        bench.ResultsError, match=r"suite='no-such-suite': no results found \(searched .*regions"
    ):
        bench.load("no-such-suite")
    with pytest.raises(ValueError, match=r"suite='\.\./regions': not a suite name"):
        bench.load("../regions")


def test_a_missing_directory_is_named(bench, tmp_path):
    with pytest.raises(bench.ResultsError, match=f"where='{tmp_path}/gone': no such directory"):
        bench.load("regions", tmp_path / "gone")
    with pytest.raises(bench.ResultsError, match="holds neither results.json nor regions/results.json"):
        bench.load("regions", tmp_path)


def test_malformed_json_and_another_suites_results_are_refused(bench, tmp_path):
    (tmp_path / "results.json").write_text('{"suite": "regions", ')
    with pytest.raises(bench.ResultsError, match=f"path='{tmp_path}/results.json': not JSON: "):
        bench.load("regions", tmp_path)
    (tmp_path / "results.json").write_text("[1, 2]")
    with pytest.raises(bench.ResultsError, match="expected a JSON object, found a list"):
        bench.load("regions", tmp_path)
    (tmp_path / "results.json").write_text('{"suite": "umt"}')
    with pytest.raises(bench.ResultsError, match="suite='regions': .* holds the results of the suite 'umt'"):
        bench.load("regions", tmp_path)
    (tmp_path / "results.json").write_text('{"suite": "regions", "bandwidth": 3}')
    with pytest.raises(bench.ResultsError, match="not the schema of the regions suite"):
        bench.load("regions", tmp_path)


def test_a_fresh_strata_bench_regions_run_loads_from_its_out_directory(bench, tmp_path):
    strata_bin = Path(os.environ.get("STRATA_BIN", REPO / "build" / "default" / "bin" / "strata"))
    harness = strata_bin.parent / "strata-bench-regions"
    require(
        strata_bin.is_file() and harness.is_file(), f"{strata_bin} and {harness} (build the default preset)"
    )
    out = tmp_path / "out"
    command = [str(strata_bin), "bench", "regions", "--out", str(out), "--size", "256K", "--repeats", "3"]
    command += ["--disk-size", "8M", "--dir", "/var/tmp"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    raw = json.loads((out / "results.json").read_text())
    sut = bench.load("regions", out)
    assert sut.path == out / "results.json"
    assert sut.command.startswith("strata bench regions --out")
    kinds = {row["kind"] for row in raw["bandwidth"]["results"]}
    assert {m.config["kind"] for m in sut.select("gbps")} == kinds and len(kinds) >= 4
    for row in raw["bandwidth"]["results"]:
        median = sut.select("gbps", kind=row["kind"], pattern=row["pattern"])
        assert len(median) == 1 and median[0].repeats == 3 and median[0].value == row["gbps"]["median"]


def test_the_modules_docstrings_run_as_doctests(bench):
    result = doctest.testmod(bench, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 5 and result.failed == 0, result


def test_the_stubs_name_every_public_function_and_parameter(bench):
    stub = ast.parse(Path(bench.__file__).with_suffix(".pyi").read_text())

    def signatures(body, prefix=""):
        for node in body:
            if isinstance(node, ast.FunctionDef):
                args = node.args
                yield (
                    prefix + node.name,
                    [a.arg for a in args.args + args.kwonlyargs]
                    + (["**" + args.kwarg.arg] if args.kwarg else []),
                )
            elif isinstance(node, ast.ClassDef):
                yield prefix + node.name, None
                yield from signatures(node.body, node.name + ".")

    def runtime(obj, prefix=""):
        public = obj.__all__ if obj is bench else [n for n in vars(obj) if not n.startswith("_")]
        for name in public:
            value = vars(obj)[name]
            if inspect.isfunction(value):
                params = inspect.signature(value).parameters.values()
                yield prefix + name, [("**" if p.kind is p.VAR_KEYWORD else "") + p.name for p in params]
            elif isinstance(value, property):
                yield prefix + name, ["self"]
            elif inspect.isclass(value) and not prefix:
                yield name, None
                yield from runtime(value, name + ".")

    assert dict(signatures(stub.body)) == dict(runtime(bench))
