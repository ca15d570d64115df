# SPDX-License-Identifier: MIT
"""scripts/check-report-figures: the prose of the benchmark reports quotes only figures in their results.

The fixtures are small made-up reports whose figures are literals written here, so a test fails when the
checker lets a drifted figure through or refuses a correct one.
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CHECKER = REPO / "scripts" / "check-report-figures"


def make_repo(tmp_path: Path, readme: str, top_readme: str = "# x\n") -> Path:
    suite = tmp_path / "docs" / "benchmarks" / "demo"
    suite.mkdir(parents=True)
    (suite / "results.json").write_text(
        json.dumps(
            {
                "summary": {
                    "ratio_to_memory": 0.7712,
                    "p50_ns": 418.0,
                    "overhead": 0.0961,
                    "memcpy_gbps": 12.46,
                },
                "records": [{"seconds": 9.99}],
            }
        )
    )
    (suite / "results.md").write_text("| run | wall s |\n|---|---|\n| 1 | 3.25 |\n")
    (suite / "README.md").write_text(readme)
    (tmp_path / "README.md").write_text(top_readme)
    return tmp_path


def check(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(CHECKER), "--root", str(root)], capture_output=True, text=True)


def test_figures_that_round_from_the_results_pass(tmp_path):
    root = make_repo(
        tmp_path,
        "Storage reaches 0.77× memory, a handoff takes 0.42 µs (418 ns), the overhead is 9.6 % and memcpy "
        "runs at 12.5 GB/s; one run took 3.25 s.\n",
    )
    done = check(root)
    assert done.returncode == 0, done.stderr
    assert "0 figure(s) not found" in done.stdout


def test_a_drifted_figure_fails_and_is_named(tmp_path):
    root = make_repo(tmp_path, "Storage reaches 0.78× memory and memcpy runs at 4.8 GB/s.\n")
    done = check(root)
    assert done.returncode == 1
    assert "0.78×" in done.stderr
    assert "4.8GB/s" in done.stderr
    assert "2 figure(s) not found" in done.stdout


def test_figures_of_raw_records_do_not_count_as_results(tmp_path):
    root = make_repo(tmp_path, "The run took 9.99 s.\n")
    assert check(root).returncode == 1


def test_a_unit_must_match_the_kind_of_value(tmp_path):
    # 0.7712 is a ratio: quoting it as a bandwidth is a drift, not a match.
    root = make_repo(tmp_path, "The window reaches 0.77 GB/s.\n")
    assert check(root).returncode == 1


def test_paper_figures_targets_and_allow_listed_settings_are_not_checked(tmp_path):
    root = make_repo(
        tmp_path,
        "Storage reaches 0.77× (paper 0.45×, target ≥ 0.75×) with a 250 MiB/s throttle.\n\n"
        "<!-- figures not measured: 250 MiB/s (a setting) -->\n\n"
        "| experiment | paper | target | here |\n|---|---|---|---|\n| mSTREAM | 0.45× | 0.75× | 0.77× |\n",
    )
    done = check(root)
    assert done.returncode == 0, done.stderr


def test_a_range_checks_both_ends(tmp_path):
    root = make_repo(tmp_path, "Runs took 3.25–9.1 s.\n")
    done = check(root)
    assert done.returncode == 1
    assert ": 9.1s is not" in done.stderr and ": 3.25s is not" not in done.stderr


def test_a_table_is_checked_against_the_report_its_caption_links(tmp_path):
    top = (
        "## Benchmark results\n\n**Demo** — [docs/benchmarks/demo/](docs/benchmarks/demo/):\n\n"
        "| experiment | target | strata here | verdict |\n|---|---|---|---|\n| storage | ≥ 0.75× | 0.81× | met |\n"
    )
    root = make_repo(tmp_path, "Nothing quoted.\n", top)
    done = check(root)
    assert done.returncode == 1
    assert "README.md:7: 0.81×" in done.stderr


def test_prose_that_cites_no_report_is_not_checked(tmp_path):
    root = make_repo(tmp_path, "Nothing quoted.\n", "A test measured 55 µs.\n")
    assert check(root).returncode == 0


def test_the_committed_reports_agree_with_their_results():
    done = subprocess.run([sys.executable, str(CHECKER)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def commit_all(root: Path, message: str) -> str:
    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
            capture_output=True,
            text=True,
            check=True,
        ).stdout

    if not (root / ".git").exists():
        git("init", "-q")
    git("add", "-A")
    git("commit", "-q", "-m", message)
    return git("rev-parse", "--short=7", "HEAD").strip()


def with_an_earlier_run_in_history(tmp_path: Path) -> tuple[Path, str]:
    """A demo suite whose run "round-1" (its own results: 1.19 %) was committed, then left the tree."""
    root = make_repo(tmp_path, "Nothing quoted.\n")
    run = root / "docs" / "benchmarks" / "demo" / "round-1"
    run.mkdir()
    (run / "results.json").write_text(json.dumps({"overhead": 0.0119}))
    commit = commit_all(root, "round 1")
    shutil.rmtree(run)
    return root, commit


def test_a_figure_of_an_earlier_run_is_checked_against_git_history(tmp_path):
    root, commit = with_an_earlier_run_in_history(tmp_path)
    readme = root / "docs" / "benchmarks" / "demo" / "README.md"
    readme.write_text(
        f"The first round measured 1.19 % (`git show {commit}:docs/benchmarks/demo/round-1/results.json`).\n"
    )
    done = check(root)
    assert done.returncode == 0, done.stderr
    readme.write_text(
        f"The first round measured 1.21 % (`git show {commit}:docs/benchmarks/demo/round-1/`).\n"
    )
    done = check(root)
    assert (
        done.returncode == 1 and f"1.21% is not in the results of demo, demo/round-1@{commit}" in done.stderr
    )


def test_a_link_to_an_earlier_run_uses_the_commit_its_suites_readme_names(tmp_path):
    root, commit = with_an_earlier_run_in_history(tmp_path)
    (root / "docs" / "benchmarks" / "demo" / "README.md").write_text(
        f"Earlier runs: `git show {commit}:docs/benchmarks/demo/`.\n"
    )
    (root / "README.md").write_text("Round 1 measured 1.19 % ([round-1](docs/benchmarks/demo/round-1/)).\n")
    done = check(root)
    assert done.returncode == 0, done.stderr
    # Without a commit to read it from, the earlier run cannot vouch for the figure: both are named.
    (root / "docs" / "benchmarks" / "demo" / "README.md").write_text("No earlier runs named.\n")
    done = check(root)
    assert done.returncode == 1
    assert (
        "cites docs/benchmarks/demo/round-1, not in the tree: its suite's README names no commit"
        in done.stderr
    )


def test_a_run_that_git_cannot_read_is_named(tmp_path):
    root, _ = with_an_earlier_run_in_history(tmp_path)
    (root / "README.md").write_text(
        "Round 2 measured 1.19 % (`git show 0000000:docs/benchmarks/demo/round-2/`).\n"
    )
    done = check(root)
    assert done.returncode == 1
    assert "git cannot read 0000000:docs/benchmarks/demo/round-2/" in done.stderr
