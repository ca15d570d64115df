# SPDX-License-Identifier: MIT
"""scripts/bench-summary: docs/benchmarks/README.md and README.md's headline figures come from the suites'
results.json, and --check fails when either differs from them.

The fixtures are small made-up suites whose rows are literals written here, so a test fails when the
generator drops, reorders or invents a row, or lets a stale page pass.
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from capability import require

REPO = Path(__file__).resolve().parents[2]
SUMMARY = REPO / "scripts" / "bench-summary"
REPORTS = REPO / "docs" / "benchmarks"
README = (
    "# strata\n\nIntro.\n\n<!-- headline-figures:begin -->\nstale\n<!-- headline-figures:end -->\n\nAfter.\n"
)


def target(id: str, measured: str, met, headline=False, **extra) -> dict:
    return {
        "id": id,
        "experiment": f"experiment of {id}",
        "paper": f"009 Fig. 1: paper figure of {id}",
        "target": f"definition of {id}",
        "named": "abc1234",
        "measured": measured,
        "met": met,
        "headline": headline,
    } | extra


def make_repo(tmp_path: Path, suites: dict[str, list[dict] | None]) -> Path:
    for name, rows in suites.items():
        suite = tmp_path / "docs" / "benchmarks" / name
        suite.mkdir(parents=True)
        # A suite of its own name (strata.bench reads its medians generically), under a real suite's folder.
        doc = {"suite": f"fixture-{name}", "command": f"bench/{name}/run", "x": {"median": 1, "samples": [1]}}
        if rows is not None:
            doc["targets"] = rows
        (suite / "results.json").write_text(json.dumps(doc))
    (tmp_path / "README.md").write_text(README)
    return tmp_path


def run(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SUMMARY), "--root", str(root), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def table_rows(text: str, header: str) -> list[list[str]]:
    block = text[text.index(header) :].split("\n\n")[0].splitlines()[2:]
    return [[c.strip() for c in line.strip("|").split(" | ")] for line in block]


def two_suites(tmp_path: Path) -> Path:
    return make_repo(
        tmp_path,
        {
            "umt": [
                target("new", "96.59%", True, headline=True),
                target("other", "0.34%", None),
                target("old", "94.58%", False, superseded_by="new"),
            ],
            "external": [target("read", "1.38×", False, headline=True)],
            "regions": [],
        },
    )


def test_every_target_of_every_suite_is_a_row_in_the_papers_order(tmp_path):
    root = two_suites(tmp_path)
    done = run(root)
    assert done.returncode == 0, done.stderr
    page = (root / "docs" / "benchmarks" / "README.md").read_text()
    rows = table_rows(page, "| suite | experiment |")
    # external (paper 000) before umt (002); a replaced definition right after the row that replaced it.
    assert [(r[0], r[4], r[5]) for r in rows] == [
        ("external", "1.38×", "**missed**"),
        ("umt", "96.59%", "met"),
        ("umt", "94.58%", "**missed**"),
        ("umt", "0.34%", "not established"),
    ]
    assert rows[2][3] == "definition of old (named in abc1234; superseded by `new`)"
    assert (
        rows[0][2] == "009 Fig. 1: paper figure of read" and rows[0][6] == "[results](./external/results.md)"
    )
    assert "Suites that name no target (measurements only): regions." in page


def test_the_readme_mode_fills_only_the_region_between_the_markers(tmp_path):
    root = two_suites(tmp_path)
    readme = tmp_path / "fixture.md"
    readme.write_text(README)
    assert run(root, "--readme", str(readme)).returncode == 0
    text = readme.read_text()
    head, rest = text.split("<!-- headline-figures:begin -->")
    region, tail = rest.split("<!-- headline-figures:end -->")
    assert head == "# strata\n\nIntro.\n\n" and tail == "\n\nAfter.\n"
    assert "stale" not in region
    rows = table_rows(region, "| paper | target |")
    assert rows == [
        [
            "009 Fig. 1: paper figure of read",
            "[experiment of read](docs/benchmarks/external/): definition of read",
            "1.38×",
            "**missed**",
        ],
        [
            "009 Fig. 1: paper figure of new",
            "[experiment of new](docs/benchmarks/umt/): definition of new",
            "96.59%",
            "met",
        ],
    ]
    assert run(root, "--readme", str(readme)).stdout == ""  # nothing left to write


def test_check_fails_when_a_result_or_the_readme_region_changes(tmp_path):
    root = two_suites(tmp_path)
    readme = tmp_path / "README.md"
    assert run(root, "--readme", str(readme)).returncode == 0
    assert run(root, "--readme", str(readme), "--check").returncode == 0

    readme.write_text(readme.read_text().replace("96.59%", "97.00%"))  # typed, not generated
    done = run(root, "--readme", str(readme), "--check")
    assert done.returncode == 1 and f"{readme} differ" in done.stderr
    assert run(root, "--readme", str(readme)).returncode == 0

    results = root / "docs" / "benchmarks" / "external" / "results.json"
    doc = json.loads(results.read_text())
    doc["targets"][0]["measured"] = "1.19×"
    doc["targets"][0]["met"] = True
    results.write_text(json.dumps(doc))
    page = root / "docs" / "benchmarks" / "README.md"
    before = page.read_text()
    done = run(root, "--readme", str(readme), "--check")
    assert done.returncode == 1
    assert str(page) in done.stderr and str(readme) in done.stderr and "+| external" in done.stderr
    assert page.read_text() == before  # --check writes nothing


@pytest.mark.parametrize(
    "suites, message",
    [
        (
            {"a": [target(f"t{i}", "1×", True, headline=True) for i in range(13)]},
            "at most 12 headline rows, 13 marked: a/t0, ",
        ),
        (
            {"a": [target("new", "1×", True), target("old", "1×", True, headline=True, superseded_by="new")]},
            "headline rows must be current definitions; superseded: a/old",
        ),
        ({"a": None}, 'a/results.json: no "targets" list (bench/a/report.py writes it'),
        ({"a": [target("t", "1×", True) | {"met": "yes"}]}, "targets[0]: met='yes': expected bool or null"),
        ({"a": [{"target": "t", "met": True}]}, "a target row without an id ('t')"),
    ],
)
def test_results_that_break_the_rules_are_named(tmp_path, suites, message):
    root = make_repo(tmp_path, suites)
    done = run(root, "--readme", str(root / "README.md"))
    assert done.returncode == 1
    assert message in done.stderr
    assert not (root / "docs" / "benchmarks" / "README.md").exists()


def test_a_readme_without_the_markers_is_refused(tmp_path):
    root = two_suites(tmp_path)
    (root / "README.md").write_text("# strata\n\nNo markers.\n")
    done = run(root, "--readme", str(root / "README.md"))
    assert done.returncode == 1 and "expected one line <!-- headline-figures:begin -->" in done.stderr
    assert (root / "README.md").read_text() == "# strata\n\nNo markers.\n"


def test_the_committed_summary_agrees_with_the_results():
    args = ["--check"]
    # README.md is checked once it holds the markers (it gets them when it takes the headline table).
    if "<!-- headline-figures:begin -->" in (REPO / "README.md").read_text():
        args += ["--readme", str(REPO / "README.md")]
    done = run(REPO, *args)
    assert done.returncode == 0, done.stderr


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def rewritten_definitions(repo: Path) -> tuple[list[str], int]:
    """(problems, rows compared): every committed version of every docs/benchmarks/*/results.json against
    the tree's; a row keeps its id's definition for as long as the id exists, and names a commit."""
    shallow = git(repo, "rev-parse", "--is-shallow-repository").strip() == "true"
    problems, compared = [], 0
    for results in sorted((repo / "docs" / "benchmarks").glob("*/results.json")):
        rel = results.relative_to(repo).as_posix()
        now = {r["id"]: r for r in json.loads(results.read_text())["targets"]}
        for row in now.values():
            named = subprocess.run(
                ["git", "-C", str(repo), "merge-base", "--is-ancestor", row["named"], "HEAD"]
            )
            if len(row["named"]) < 7 or (not shallow and named.returncode != 0):
                problems.append(f"{rel}: {row['id']} names {row['named']!r}, not a commit of this history")
        for commit in git(repo, "log", "--format=%H", "--", rel).split():
            try:
                old = json.loads(git(repo, "show", f"{commit}:{rel}")).get("targets")
            except subprocess.CalledProcessError:  # the file was deleted in that commit
                continue
            for row in old if isinstance(old, list) else []:
                if isinstance(row, dict) and row.get("id") in now:
                    compared += 1
                    problems += [
                        f"{rel} at {commit[:7]}: {row['id']}'s {key} was rewritten"
                        for key in ("experiment", "paper", "target", "named")
                        if row[key] != now[row["id"]][key]
                    ]
    return problems, compared


def test_a_targets_definition_is_never_rewritten_in_the_history():
    require(shutil.which("git") is not None and (REPO / ".git").exists(), "a git checkout of strata")
    problems, compared = rewritten_definitions(REPO)
    assert problems == []
    assert compared > 0  # the history holds rows with ids (from the commit that introduced them on)


def test_a_rewritten_definition_in_a_fixture_history_is_named(tmp_path):
    require(shutil.which("git") is not None, "git")
    root = make_repo(tmp_path, {"a": [target("t", "1×", True)]})
    git(root, "init", "-q")
    git(
        root,
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@example.org",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "base",
    )
    base = git(root, "rev-parse", "--short=7", "HEAD").strip()
    results = root / "docs" / "benchmarks" / "a" / "results.json"
    doc = json.loads(results.read_text())
    doc["targets"][0]["named"] = base
    results.write_text(json.dumps(doc))
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "-m", "run")
    assert rewritten_definitions(root) == ([], 1)
    doc["targets"][0]["target"] = "a looser definition of t"  # reinterpreted after the run
    results.write_text(json.dumps(doc))
    problems, _ = rewritten_definitions(root)
    assert (
        len(problems) == 1
        and "a/results.json at " in problems[0]
        and "t's target was rewritten" in problems[0]
    )
