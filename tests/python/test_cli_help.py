# SPDX-License-Identifier: MIT
"""Every `strata` command answers --help (exit 0) with each option's default and its exit codes, refuses an
unknown option with exit 2, and each command that reports has --json (docs/cli.md). The commands are found by
walking the help's own "Subcommands:" sections from `strata --help`, so a new command is checked too."""

import os
import re
import subprocess
from pathlib import Path

import pytest
from capability import require

REPO = Path(__file__).resolve().parents[2]
STRATA_BIN = Path(os.environ.get("STRATA_BIN", REPO / "build" / "default" / "bin" / "strata"))
# Commands that report something (a table, a list, a result): each must offer --json.
REPORTING = {"doctor", "demo", "run", "shm ls", "shm gc", "fs mount", "fs ls", "bench"}
VALUE_TYPES = ("TEXT", "UINT", "INT", "FLOAT", "NUMBER", "ENUM")


def strata(*args: str) -> subprocess.CompletedProcess:
    require(STRATA_BIN.is_file(), f"the strata command at {STRATA_BIN} (build the default preset)")
    return subprocess.run([str(STRATA_BIN), *args], capture_output=True, text=True, timeout=60)


def section(help_text: str, title: str) -> list[str]:
    """The entry lines of a help section ("Options:", "Subcommands:"), continuation lines joined."""
    lines: list[str] = []
    inside = False
    for line in help_text.splitlines():
        if line.strip() == title:
            inside = True
        elif inside and line and not line.startswith(" "):
            break
        elif inside and line.strip():
            if line.startswith(" " * 10) and lines:  # a description wrapped onto its own line
                lines[-1] += "  " + line.strip()
            else:
                lines.append(line.strip())
    return lines


def commands(path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    done = strata(*path, "--help")
    found = [path] if path else []
    for entry in section(done.stdout, "Subcommands:"):
        found += commands((*path, entry.split()[0]))
    return found


COMMANDS = commands() if STRATA_BIN.is_file() else []


def test_the_walk_finds_every_command():
    require(STRATA_BIN.is_file(), f"the strata command at {STRATA_BIN}")
    names = {" ".join(c) for c in COMMANDS}
    assert {
        "doctor",
        "demo",
        "bench",
        "ocr",
        "run",
        "shm ls",
        "shm gc",
        "fs umount",
        "completion",
    } <= names, names


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_help_exits_0_with_every_options_default_and_the_exit_codes(command):
    done = strata(*command, "--help")
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    assert "Exit codes:" in text and "2 usage error" in text, done.stdout
    for entry in section(done.stdout, "Options:"):
        names, _, description = entry.partition("  ")
        takes_value = any(t in names for t in VALUE_TYPES)
        if takes_value and "=" not in names and "default" not in description:
            pytest.fail(f"strata {' '.join(command)} --help: {names.strip()} gives no default: {entry}")


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_an_unknown_option_is_a_usage_error_exit_2(command):
    if command == ("ocr",):
        done = strata("ocr", "--no-such-option", "/bin/true")
    else:
        done = strata(*command, "--no-such-option")
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    if command not in (
        ("shm",),
        ("fs",),
        ("container",),
    ):  # groups: CLI11 first says a subcommand is required
        assert "no-such-option" in done.stderr + done.stdout


@pytest.mark.parametrize("command", sorted(REPORTING))
def test_a_reporting_command_has_json(command):
    done = strata(*command.split(), "--help")
    assert re.search(r"^\s+--json\b", done.stdout, re.M), done.stdout


def test_version_exits_0_and_a_missing_subcommand_exits_2():
    assert strata("--version").returncode == 0
    assert strata().returncode == 2
    assert strata("shm").returncode == 2
    assert strata("bench").returncode == 2
    assert strata("bench", "no-such-suite").returncode == 2
