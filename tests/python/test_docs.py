# SPDX-License-Identifier: MIT
"""The front door: README.md and docs/ against the repository and the programs they show.

- README.md is at most 8,000 characters.
- Every link in README.md and docs/**/*.md names a file or folder of this repository; none leaves it
  (no web address, no absolute path, no ../ out of the tree). Paths written in code spans and code
  blocks may not leave it either (`../shared/...`, the workspace `/work/...`).
- Every example marked in README.md and docs/getting-started/*.md runs and prints what the page shows.

Marking an example (the pages' own convention, CONTRIBUTING.md):

    <!-- example -->
    ```sh
    commands
    ```
    ```text
    the output they print
    ```

The commands run with `bash -e -o pipefail` from the repository root, with TMPDIR set to a fresh
directory (removed afterwards); their standard output must equal the block that follows, line for
line, trailing blanks ignored. Options after `example:` in the comment:

- `decimals vary`: every number with a fractional part (2.175, 459.8) becomes `#` in both the shown
  and the printed output, and runs of blanks become one blank (a column's width follows its
  numbers). Times and rates vary from run to run; the words, the lines and every integer (counts,
  sums, sizes, exit codes) must still match, so a page whose program changed still fails.
- `number before WORD varies`: the integer right before WORD (`sent 86 messages`) becomes `#` in
  both, for a count that depends on timing; every other integer must still match.
- `UCX warnings`: lines UCX prints on standard output (`[<time>] [<host>:<pid>:<thread>] <file>:<line>
  UCX  WARN ...`) are dropped from the printed output. MPICH's ch4:ucx prints "unexpected tag-receive
  descriptor ... was not matched" at MPI_Finalize when a message arrived that no receive matched;
  the DSM's shutdown leaves one now and then (about 1 run in 16, reported as a DSM issue). Only
  the DSM page uses it, and only WARN lines of UCX's own format are dropped.
- `root`: the commands need root (network namespaces); without root the example is skipped, and
  under CI=true it fails (tests/python/capability.py).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from capability import require

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
GUIDES = sorted((REPO / "docs" / "getting-started").glob("*.md"))
README_LIMIT = 8000
EXAMPLE_TIMEOUT_S = 600

MARKER = re.compile(r"^<!--\s*example(?::\s*(?P<options>[^>]*?))?\s*-->\s*$")
KNOWN_OPTIONS = {"decimals vary", "root", "UCX warnings"}
UCX_WARNING = re.compile(r"^\[\d+\.\d+\] \[[^\]]+\] +\S+:\d+ +UCX +WARN ")
NUMBER_BEFORE = re.compile(r"^number before (\S+) varies$")
FENCE = re.compile(r"^(`{3,})\s*([\w+-]*)\s*$")


@dataclass
class Example:
    page: Path
    line: int
    options: set[str]
    commands: str
    output: str

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def read_fence(lines: list[str], start: int, page: Path) -> tuple[str, str, int]:
    """The fenced block opening at lines[start]: (language, text, index after its closing fence)."""
    opening = FENCE.match(lines[start]) if start < len(lines) else None
    if not opening:
        raise AssertionError(f"{page.relative_to(REPO)}:{start + 1}: a fenced block was expected here")
    fence, language = opening.groups()
    for end in range(start + 1, len(lines)):
        if lines[end].strip() == fence:
            return language, "\n".join(lines[start + 1 : end]), end + 1
    raise AssertionError(f"{page.relative_to(REPO)}:{start + 1}: the block is never closed")


def skip_blank(lines: list[str], index: int) -> int:
    while index < len(lines) and not lines[index].strip():
        index += 1
    return index


def marked_examples(page: Path) -> list[Example]:
    lines = page.read_text().splitlines()
    found = []
    for index, line in enumerate(lines):
        marker = MARKER.match(line.strip())
        if not marker:
            continue
        options = {o.strip() for o in (marker["options"] or "").split(",") if o.strip()}
        unknown = {o for o in options - KNOWN_OPTIONS if not NUMBER_BEFORE.match(o)}
        assert not unknown, f"{page.relative_to(REPO)}:{index + 1}: unknown example options {sorted(unknown)}"
        language, commands, after = read_fence(lines, skip_blank(lines, index + 1), page)
        assert language in ("sh", "bash"), (
            f"{page.relative_to(REPO)}:{index + 2}: commands must be a sh block"
        )
        _, output, _ = read_fence(lines, skip_blank(lines, after), page)
        found.append(Example(page, index + 1, options, commands, output))
    return found


def all_examples() -> list[Example]:
    return [example for page in [README, *GUIDES] for example in marked_examples(page)]


DECIMAL = re.compile(r"\d+\.\d+")
BLANKS = re.compile(r"[ \t]+")


def normalise(text: str, options: set[str]) -> list[str]:
    lines = [line.rstrip() for line in text.strip("\n").splitlines()]
    if "UCX warnings" in options:
        lines = [line for line in lines if not UCX_WARNING.match(line)]
    if "decimals vary" in options:
        lines = [BLANKS.sub(" ", DECIMAL.sub("#", line)) for line in lines]
    for option in options:
        if word := NUMBER_BEFORE.match(option):
            counted = re.compile(rf"\b\d+(?= {re.escape(word[1])}\b)")
            lines = [counted.sub("#", line) for line in lines]
    return lines


def test_normalising_varying_decimals_keeps_integers_and_words():
    shown = "  throughput 4597.5 MB/s   459.8 iterations/s   checksum errors 0"
    assert normalise(shown, {"decimals vary"}) == normalise(
        "  throughput 12.0 MB/s 3.25 iterations/s checksum errors 0", {"decimals vary"}
    )
    assert normalise(shown, {"decimals vary"}) != normalise(
        shown.replace("errors 0", "errors 1"), {"decimals vary"}
    )
    assert normalise(shown, {"decimals vary"}) != normalise(shown.replace("MB/s", "GB/s"), {"decimals vary"})
    assert normalise("sum 10", set()) != normalise("sum 10.5", set())


def test_dropping_ucx_warnings_drops_only_lines_in_their_format():
    printed = (
        "result 1\n[1795930564.770302] [vm:6001 :0]       tag_match.c:62   UCX  WARN  unexpected tag-receive"
        " descriptor 0x7f49ac006b00 was not matched\nresult 2"
    )
    assert normalise(printed, {"UCX warnings"}) == ["result 1", "result 2"]
    assert normalise("result 1\nUCX WARN made up\nresult 2", {"UCX warnings"}) != ["result 1", "result 2"]
    assert normalise(printed, set()) != ["result 1", "result 2"]


def test_normalising_a_count_before_a_word_keeps_the_other_integers():
    option = {"number before messages varies"}
    assert normalise("0 of 1536 cells differ; sent 86 messages", option) == normalise(
        "0 of 1536 cells differ; sent 91 messages", option
    )
    assert normalise("0 of 1536 cells differ; sent 86 messages", option) != normalise(
        "3 of 1536 cells differ; sent 86 messages", option
    )


@pytest.mark.parametrize("example", all_examples(), ids=lambda e: e.id)
def test_every_marked_example_prints_what_its_page_shows(example: Example):
    if "root" in example.options:
        require(os.geteuid() == 0, f"root for the example at {example.id}")
    require(
        (REPO / "build/default/bin/strata").exists(), "the default build (cmake --workflow --preset default)"
    )
    with tempfile.TemporaryDirectory(prefix="strata-docs-") as tmp:
        env = {**os.environ, "TMPDIR": tmp}
        result = subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", example.commands],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=EXAMPLE_TIMEOUT_S,
        )
    shown = normalise(example.output, example.options)
    printed = normalise(result.stdout, example.options)
    assert result.returncode == 0, (
        f"{example.id}: the commands exited with {result.returncode}\n--- stdout\n{result.stdout}"
        f"--- stderr\n{result.stderr}"
    )
    assert printed == shown, (
        f"{example.id}: the output differs from the page (normalised: {sorted(example.options) or 'none'})\n"
        f"--- the page shows\n"
        + "\n".join(shown)
        + "\n--- the commands printed\n"
        + "\n".join(printed)
        + f"\n--- stderr\n{result.stderr}"
    )


def example_programs() -> set[str]:
    """Names of the programs the build makes from sources under examples/ (any CMake file)."""
    names = set()
    for cmake in [
        *REPO.glob("cmake/*.cmake"),
        *REPO.glob("tests/**/*.cmake"),
        *REPO.glob("tests/**/CMakeLists.txt"),
    ]:
        text = cmake.read_text()
        names |= set(re.findall(r"(?:add_executable|strata_mpi_program)\((\w+)\s[^)]*examples/", text))
    return names


def runs_an_example(commands: str, programs: set[str]) -> bool:
    return "examples/" in commands or any(re.search(rf"bin/{name}\b", commands) for name in programs)


def test_the_readme_shows_four_examples_each_from_examples():
    programs = example_programs()
    assert {"rma_counter", "external_tasks"} <= programs, programs
    examples = marked_examples(README)
    assert len(examples) >= 4, (
        f"README.md marks {len(examples)} examples, expected the four of the front page"
    )
    for example in examples:
        assert runs_an_example(example.commands, programs), (
            f"{example.id}: the example runs nothing from examples/"
        )


def test_every_getting_started_page_is_built_around_examples_that_run():
    names = {page.stem for page in GUIDES}
    assert {"mpi", "tasks", "python", "distributed", "operator"} <= names, (
        f"docs/getting-started has {sorted(names)}"
    )
    for page in GUIDES:
        examples = marked_examples(page)
        assert examples, f"{page.relative_to(REPO)} marks no example"
        assert any(runs_an_example(e.commands, example_programs()) for e in examples), (
            f"{page.relative_to(REPO)}: no marked example runs a program under examples/"
        )


def test_the_readme_is_at_most_8000_characters():
    length = len(README.read_text())
    assert length <= README_LIMIT, f"README.md has {length} characters, more than {README_LIMIT}"


# ---- links and paths -------------------------------------------------------------------------

LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
CODE_SPAN = re.compile(r"`([^`\n]+)`")
CLIMB = re.compile(r"(?<![\w./-])((?:\.\./)+[\w./-]+)")
WORKSPACE = re.compile(r"(?<![\w.-])/work/[\w./-]*")


BENCHMARKS = REPO / "docs" / "benchmarks"


def pages() -> list[Path]:
    """README.md and docs/**/*.md but the benchmark reports (checked on their own below)."""
    docs = [p for p in sorted((REPO / "docs").rglob("*.md")) if not p.is_relative_to(BENCHMARKS)]
    return [README, *docs]


def code_parts(text: str) -> list[tuple[int, str]]:
    """(line number, text) of every code span and every line of a fenced code block."""
    parts = []
    in_fence = None
    for number, line in enumerate(text.splitlines(), 1):
        fence = FENCE.match(line.strip())
        if fence and (in_fence is None or line.strip() == in_fence):
            in_fence = fence.group(1) if in_fence is None else None
            continue
        if in_fence is not None:
            parts.append((number, line))
        else:
            parts += [(number, span) for span in CODE_SPAN.findall(line)]
    return parts


def link_problems(page: Path, text: str | None = None) -> list[str]:
    """What is wrong with the links and paths of `page` (its text, unless given)."""
    problems = []
    text = page.read_text() if text is None else text
    where = page.relative_to(REPO)
    for number, line in enumerate(text.splitlines(), 1):
        for target in LINK.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                problems.append(f"{where}:{number}: {target}: a link that leaves the repository")
                continue
            path = target.split("#", 1)[0]
            if not path:
                continue  # a heading of this page
            if path.startswith("/"):
                problems.append(f"{where}:{number}: {target}: an absolute path, outside the repository")
                continue
            resolved = (page.parent / path).resolve()
            if not resolved.is_relative_to(REPO):
                problems.append(f"{where}:{number}: {target}: leaves the repository (to {resolved})")
            elif not resolved.exists():
                problems.append(
                    f"{where}:{number}: {target}: no such file or folder ({resolved.relative_to(REPO)})"
                )
    for number, code in code_parts(text):
        for path in CLIMB.findall(code):
            # Paths in code are often not the repository's (`../lib` of an installed prefix), so
            # only a climb that names something beside the tree counts: it exists in the folder
            # holding the repository, from this page or from the root, or it is the design folder.
            beside = [(base / path).resolve() for base in (page.parent, REPO)]
            outside = [
                p
                for p in beside
                if p.is_relative_to(REPO.parent) and not p.is_relative_to(REPO) and p.exists()
            ]
            if outside or path.startswith(("../shared/", "../../shared/")):
                problems.append(f"{where}:{number}: `{path}`: a path in code that leaves the repository")
        for path in WORKSPACE.findall(code):
            problems.append(
                f"{where}:{number}: `{path}`: a path of the machine strata was written on, outside the repository"
            )
    return problems


def test_every_link_and_path_of_readme_and_docs_stays_inside_the_repository():
    problems = [problem for page in pages() for problem in link_problems(page)]
    assert not problems, (
        f"{len(problems)} links or paths leave the repository or name nothing in it:\n" + "\n".join(problems)
    )


def test_every_link_and_path_of_the_benchmark_reports_stays_inside_the_repository():
    problems = [problem for page in sorted(BENCHMARKS.rglob("*.md")) for problem in link_problems(page)]
    assert not problems, (
        f"{len(problems)} links or paths leave the repository or name nothing in it:\n" + "\n".join(problems)
    )


def test_the_link_check_catches_links_that_dangle_or_leave():
    text = (
        "[ok](architecture.md) [dangles](nope.md) [up](../../elsewhere.md) [web](https://example.org)\n"
        "`../shared/design/README.md` and `/work/bin/quiet run`, `../examples/mpi/rma_counter.c`,\n"
        "an installed prefix's `../lib` and `../libexec/strata`\n"
    )
    problems = link_problems(REPO / "docs" / "a-page.md", text)
    assert len(problems) == 5, problems
    for needle in (
        "nope.md",
        "../../elsewhere.md",
        "https://example.org",
        "../shared/design/README.md",
        "/work/bin/quiet",
    ):
        assert any(needle in p for p in problems), (needle, problems)
    assert not any("lib" in p for p in problems), problems


def test_paths_under_examples_that_the_pages_name_exist():
    missing = []
    for page in [README, *GUIDES]:
        for number, line in enumerate(page.read_text().splitlines(), 1):
            for path in re.findall(r"(?<![\w/.-])(examples/[\w./-]*\w)", line):
                if not (REPO / path).exists():
                    missing.append(f"{page.relative_to(REPO)}:{number}: {path}")
    assert not missing, "pages name files under examples/ that do not exist:\n" + "\n".join(missing)


def test_the_operator_page_explains_every_line_strata_doctor_prints():
    strata = REPO / "build/default/bin/strata"
    require(strata.exists(), "the default build (cmake --workflow --preset default)")
    done = subprocess.run([strata, "doctor", "--json"], capture_output=True, text=True, timeout=120)
    names = [c["name"] for c in json.loads(done.stdout)["capabilities"]]
    assert len(names) >= 16, names
    page = (REPO / "docs" / "getting-started" / "operator.md").read_text()
    rows = [line for line in page.splitlines() if line.startswith("| `")]
    unexplained = [name for name in names if not any(f"`{name}`" in row.split("|")[1] for row in rows)]
    assert not unexplained, f"docs/getting-started/operator.md has no row for the doctor lines {unexplained}"
