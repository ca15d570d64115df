# SPDX-License-Identifier: MIT
"""The progress line of the long-running commands (docs/cli.md#progress): `strata run`, `strata demo`,
`strata bench SUITE` and strata-video draw it on stderr when stderr is a terminal, and leave stderr and
stdout as they are when stderr is a pipe or with --quiet (or --json).

Each command runs with its stderr on a pseudo-terminal (raw mode, so the terminal adds no \\r of its own)
and its stdout on a pipe, then with both on pipes, then on the terminal with --quiet.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import selectors
import shutil
import signal
import struct
import subprocess
import sys
import termios
import time
import tty
from dataclasses import dataclass
from pathlib import Path

import pytest
from capability import require
from paced_workflow import paced_workflow

REPO = Path(__file__).resolve().parents[2]
STRATA_BIN = Path(os.environ.get("STRATA_BIN", REPO / "build" / "default" / "bin" / "strata"))
BIN_DIR = STRATA_BIN.parent


@dataclass
class Outcome:
    code: int
    stdout: bytes
    stderr: bytes  # what reached the terminal, or the pipe
    first_line_s: float | None = None  # when the first \r reached the terminal, from the start

    @property
    def stderr_text(self) -> str:
        return self.stderr.decode(errors="replace")


def run(
    argv: list[str], *, terminal: bool, env: dict | None = None, timeout: float = 120, on_start=None
) -> Outcome:
    """Runs argv with stdout on a pipe and stdin and stderr on a pseudo-terminal (terminal=True) or pipes."""
    environment = {**os.environ, **(env or {})}
    if not terminal:
        done = subprocess.run(
            argv, stdin=subprocess.DEVNULL, capture_output=True, env=environment, timeout=timeout
        )
        return Outcome(done.returncode, done.stdout, done.stderr)
    started = time.monotonic()
    first_line_s = None
    master, slave = pty.openpty()
    tty.setraw(slave)  # no \n -> \r\n: every \r on the terminal is the program's
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 250, 0, 0))
    # As a shell starts it: stdin and stderr on the terminal, which is the controlling terminal of the
    # command's own session (a program reading it from a background process group gets SIGTTIN).
    proc = subprocess.Popen(
        argv,
        stdin=slave,
        stdout=subprocess.PIPE,
        stderr=slave,
        env=environment,
        start_new_session=True,
        preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
    )
    os.close(slave)
    if on_start is not None:
        on_start(proc)
    out, err = bytearray(), bytearray()
    sel = selectors.DefaultSelector()
    sel.register(master, selectors.EVENT_READ, err)
    sel.register(proc.stdout, selectors.EVENT_READ, out)
    deadline = time.monotonic() + timeout
    try:
        while sel.get_map():
            if time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"{argv} did not finish in {timeout} s; stderr so far: {bytes(err)[-2000:]!r}")
            for key, _ in sel.select(timeout=1):
                try:
                    chunk = os.read(key.fd, 65536)
                except OSError:  # EIO: the terminal's last writer closed it
                    chunk = b""
                if chunk:
                    key.data.extend(chunk)
                    if first_line_s is None and key.fd == master and b"\r" in chunk:
                        first_line_s = time.monotonic() - started
                else:
                    sel.unregister(key.fileobj)
        code = proc.wait(timeout=max(1, deadline - time.monotonic()))
    finally:
        os.close(master)
        proc.stdout.close()
    return Outcome(code, bytes(out), bytes(err), first_line_s)


def drawn(stderr: str, prefix: str) -> list[str]:
    """The texts of the progress line as drawn: what follows each \\r that starts with the prefix."""
    return [part.rstrip() for part in stderr.split("\r") if part.startswith(prefix)]


def assert_no_line(outcome: Outcome, prefix: str) -> None:
    assert "\r" not in outcome.stderr_text, f"a \\r on stderr: {outcome.stderr_text[-1500:]!r}"
    assert prefix + " [" not in outcome.stderr_text
    assert b"\r" not in outcome.stdout


def assert_line_erased(outcome: Outcome) -> None:
    """The last thing on the terminal is not a progress line: the line was erased (\\r, spaces, \\r)."""
    text = outcome.stderr_text
    if "\r" in text:
        assert re.search(r"\r +\r$", text) or not text.rsplit("\r", 1)[1].strip(), repr(text[-300:])


def strata() -> str:
    require(STRATA_BIN.is_file(), f"the strata command at {STRATA_BIN} (build the default preset)")
    return str(STRATA_BIN)


def numbers_masked(text: bytes) -> str:
    """A report with its measurements masked: what must not change with the line. Runs of blanks
    become one, since a table's columns widen with its numbers (9.5 in one run, 10.25 in the next)."""
    return re.sub(r"[ \t]+", " ", re.sub(r"\d+(\.\d+)?", "N", text.decode()))


# --- strata run ---------------------------------------------------------------------------------------


def test_a_run_that_lasts_shows_its_iterations_on_the_terminal_and_erases_the_line(tmp_path):
    # 30 iterations paced 150 ms apart: at least 4.5 s, so the line (from 2 s) must appear.
    workflow = paced_workflow(tmp_path / "slow.toml", 30, 150_000)
    on_terminal = run([strata(), "run", str(workflow)], terminal=True)
    assert on_terminal.code == 0, on_terminal.stderr_text
    lines = drawn(on_terminal.stderr_text, "strata run")
    assert lines, f"no progress line on the terminal: {on_terminal.stderr_text!r}"
    counts = [int(m.group(1)) for m in (re.search(r"\] (\d+)/30 iterations$", x) for x in lines) if m]
    assert counts and counts == sorted(counts), lines
    # Not before 2 s (a lower bound: a loaded machine only makes it later).
    assert on_terminal.first_line_s >= 2.0, on_terminal.first_line_s
    assert_line_erased(on_terminal)
    assert on_terminal.stdout.decode().startswith("workflow ")
    piped = run([strata(), "run", str(workflow)], terminal=False)
    assert piped.code == 0
    assert_no_line(piped, "strata run")
    assert piped.stderr == b""
    assert numbers_masked(piped.stdout) == numbers_masked(on_terminal.stdout)


def test_quiet_and_json_runs_draw_nothing_even_on_a_terminal(tmp_path):
    workflow = paced_workflow(tmp_path / "slow.toml", 20, 150_000)
    quiet = run([strata(), "run", "--quiet", str(workflow)], terminal=True)
    assert quiet.code == 0
    assert_no_line(quiet, "strata run")
    assert quiet.stderr == b""
    as_json = run([strata(), "run", "--json", str(workflow)], terminal=True)
    assert as_json.code == 0
    assert_no_line(as_json, "strata run")
    assert as_json.stderr == b""
    assert json.loads(as_json.stdout)["iterations"] == 20


def test_a_run_shorter_than_two_seconds_draws_no_line(tmp_path):
    # 5 iterations of 4 KiB between two threads: milliseconds, far below the 2 s the line waits for.
    workflow = paced_workflow(tmp_path / "fast.toml", 5, 0)
    done = run([strata(), "run", str(workflow)], terminal=True)
    assert done.code == 0
    assert_no_line(done, "strata run")


def test_a_run_of_processes_shows_the_reporting_rank_s_iterations(tmp_path):
    require(shutil.which("mpiexec") is not None, "mpiexec (MPICH)")
    workflow = tmp_path / "processes.toml"
    # 20 iterations paced 130 ms apart: at least 2.6 s.
    paced_workflow(workflow, 20, 130_000, method="shm")
    done = run([strata(), "run", str(workflow)], terminal=True)
    assert done.code == 0, done.stderr_text
    assert any(re.search(r"\] \d+/20 iterations$", x) for x in drawn(done.stderr_text, "strata run"))
    quiet = run([strata(), "run", "-q", str(workflow)], terminal=True)
    assert quiet.code == 0
    assert_no_line(quiet, "strata run")


# --- strata demo --------------------------------------------------------------------------------------


def demo_steps(sections: str) -> list[dict]:
    done = run([strata(), "demo", "--only", sections, "--json"], terminal=False, timeout=300)
    assert done.code == 0, done.stderr_text
    return json.loads(done.stdout)["steps"]


@pytest.mark.parametrize("sections", ["shm", "workflow"])
def test_the_demo_names_each_step_k_of_n_where_n_is_the_steps_it_runs(sections):
    steps = demo_steps(sections)  # the report's own list: the steps that ran
    done = run([strata(), "demo", "--only", sections], terminal=True, timeout=300)
    assert done.code == 0, done.stderr_text
    lines = drawn(done.stderr_text, "strata demo")
    shown = {}
    for line in lines:
        m = re.match(r"strata demo \[(\d+)/(\d+)\] [^:]+: (.*?)  \d+:\d\d$", line)
        assert m, f"not a step line: {line!r}"
        assert int(m.group(2)) == len(steps), line
        shown[int(m.group(1))] = m.group(3)
    assert shown == {k + 1: s["name"] for k, s in enumerate(steps)}
    assert_line_erased(done)
    # Every step's report line is on stdout, whole: none was cut by the line.
    for s in steps:
        assert re.search(rf"^  ok +{re.escape(s['name'])} ", done.stdout.decode(), re.M), s["name"]


def test_the_demo_draws_nothing_piped_quiet_or_as_json():
    for argv, terminal in [
        ([strata(), "demo", "--only", "workflow"], False),
        ([strata(), "demo", "--only", "workflow", "--quiet"], True),
        ([strata(), "demo", "--only", "workflow", "--json"], True),
    ]:
        done = run(argv, terminal=terminal, timeout=300)
        assert done.code == 0, done.stderr_text
        assert_no_line(done, "strata demo")
        assert done.stderr == b"", (argv, done.stderr_text)


# --- strata bench -------------------------------------------------------------------------------------

SUITE = """#!/usr/bin/env bash
# A suite of the test's own: two steps told through bench/lib.sh and bench/bench_progress.py.
set -euo pipefail
source "{repo}/bench/lib.sh"
# In the background and waited for: a trapped signal interrupts `wait`, not a foreground sleep.
pause() {{ sleep "$1" & wait $!; }}
trap 'kill $! 2>/dev/null; echo terminated > "$MARK.term"; exit 143' TERM
[[ -n "${{MARK:-}}" ]] && echo "${{STRATA_PROGRESS_FD:-unset}}" > "$MARK"
echo "suite: starting"
echo "suite: a line on stderr" >&2
strata_bench_progress 1 2 "first half"
pause "${{PAUSE:-1.5}}"
printf 'suite: no newline yet' >&2
pause 0.3
echo ", now one" >&2
"{python}" -c 'import sys; sys.path.insert(0, "{repo}/bench"); from bench_progress import step; step(2, 2, "second  half")'
pause "${{PAUSE:-1.5}}"
echo "suite: done"
exit "${{CODE:-0}}"
"""


@pytest.fixture
def bench_dir(tmp_path):
    suite = tmp_path / "bench" / "fake"
    suite.mkdir(parents=True)
    (suite / "run").write_text(SUITE.format(repo=REPO, python=sys.executable))
    (suite / "run").chmod(0o755)
    return tmp_path / "bench"


def test_bench_shows_the_suite_s_steps_and_passes_its_output_and_exit_code_through(bench_dir):
    env = {"STRATA_BENCH_DIR": str(bench_dir), "CODE": "3"}
    done = run([strata(), "bench", "fake"], terminal=True, env=env)
    assert done.code == 3
    lines = drawn(done.stderr_text, "strata bench fake")
    texts = {re.sub(r"  \d+:\d\d$", "", x) for x in lines}
    assert "strata bench fake [1/2] first half" in texts, lines
    assert "strata bench fake [2/2] second half" in texts, lines
    # The suite's stderr reached the terminal whole, each piece after the line was erased.
    visible = "".join(
        part
        for part in done.stderr_text.split("\r")
        if part.strip(" ") and not part.startswith("strata bench")
    )
    assert "suite: a line on stderr\n" in visible
    assert "suite: no newline yet, now one\n" in visible
    assert done.stdout == b"suite: starting\nsuite: done\n"
    assert_line_erased(done)


def test_bench_piped_or_quiet_is_the_suite_alone(bench_dir, tmp_path):
    env = {"STRATA_BENCH_DIR": str(bench_dir), "MARK": str(tmp_path / "mark"), "PAUSE": "0"}
    expected_err = b"suite: a line on stderr\nsuite: no newline yet, now one\n"
    piped = run([strata(), "bench", "fake"], terminal=False, env=env)
    assert piped.code == 0
    assert (piped.stdout, piped.stderr) == (b"suite: starting\nsuite: done\n", expected_err)
    assert (tmp_path / "mark").read_text() == "unset\n"
    quiet = run([strata(), "bench", "--quiet", "fake"], terminal=True, env=env)
    assert quiet.code == 0
    assert (quiet.stdout, quiet.stderr) == (b"suite: starting\nsuite: done\n", expected_err)
    assert (tmp_path / "mark").read_text() == "unset\n"
    watched = run([strata(), "bench", "fake"], terminal=True, env=env)
    assert watched.code == 0
    assert (tmp_path / "mark").read_text().strip().isdigit()


def test_bench_passes_sigterm_on_to_the_suite_and_exits_with_its_code(bench_dir, tmp_path):
    mark = tmp_path / "mark"
    env = {"STRATA_BENCH_DIR": str(bench_dir), "MARK": str(mark), "PAUSE": "30"}

    def terminate_when_started(proc):
        for _ in range(200):
            if mark.exists():
                break
            time.sleep(0.05)
        time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)

    done = run(
        [strata(), "bench", "fake"], terminal=True, env=env, timeout=20, on_start=terminate_when_started
    )
    assert done.code == 143
    assert (tmp_path / "mark.term").read_text() == "terminated\n"


def test_a_real_suite_reports_its_steps():
    require((BIN_DIR / "strata-bench-shm-handoff").exists(), "strata-bench-shm-handoff (the default build)")
    out = Path(os.environ.get("TMPDIR", "/tmp")) / f"strata-progress-test-{os.getpid()}"
    try:
        argv = [strata(), "bench", "shm_handoff", "--iterations", "200", "--repeats", "1", "--sizes", "64"]
        # The report needs matplotlib: the environment running the tests has it.
        env = {"STRATA_VENV": os.environ.get("STRATA_VENV", str(Path(sys.executable).parents[1]))}
        done = run([*argv, "--no-python", "--out", str(out)], terminal=True, env=env, timeout=300)
        assert done.code == 0, done.stderr_text
        texts = {re.sub(r"  \d+:\d\d$", "", x) for x in drawn(done.stderr_text, "strata bench shm_handoff")}
        assert any(t.startswith("strata bench shm_handoff [1/3] C++") for t in texts), texts
        assert "strata bench shm_handoff [3/3] writing the report" in texts
    finally:
        shutil.rmtree(out, ignore_errors=True)


# --- strata-video -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    require((BIN_DIR / "strata-video").exists(), "strata-video (the default build)")
    require(shutil.which("ffmpeg") is not None, "the ffmpeg command")
    path = tmp_path_factory.mktemp("video") / "in.mkv"
    subprocess.run(
        ["ffmpeg", "-v", "error", "-nostdin", "-f", "lavfi", "-i", "testsrc=size=160x120:rate=25", "-frames:v", "24",
         "-pix_fmt", "gray", "-c:v", "ffv1", str(path)],
        check=True, timeout=60,
    )  # fmt: skip
    return path


def frame_counts(stderr: str, total: int) -> list[int]:
    lines = drawn(stderr, "strata-video")
    counts = [int(m.group(1)) for m in (re.search(rf"\] (\d+)/{total} frames$", x) for x in lines) if m]
    assert counts and len(counts) == len(lines), lines
    assert counts == sorted(counts), counts
    return counts


def test_strata_video_shows_frames_done_of_the_total_and_its_output_is_the_same_without(video, tmp_path):
    binary = str(BIN_DIR / "strata-video")
    outputs = []
    for name, argv, terminal in [
        ("tty", [], True),
        ("quiet", ["--quiet"], True),
        ("piped", [], False),
    ]:
        out = tmp_path / f"{name}.raw"
        # 40 ms a frame: about a second, several redraws of the line.
        done = run(
            [binary, "--impl", "serial", "-i", str(video), "-o", str(out), "--worker-sleep-ms", "40", *argv],
            terminal=terminal,
        )
        assert done.code == 0, done.stderr_text
        if name == "tty":
            assert max(frame_counts(done.stderr_text, 24)) > 1
            assert_line_erased(done)
        else:
            assert_no_line(done, "strata-video")
            assert done.stderr == b""
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1] == outputs[2] and len(outputs[0]) == 24 * 160 * 120


def test_strata_video_under_mpiexec_draws_where_mpiexec_s_stderr_is_a_terminal(video, tmp_path):
    require(shutil.which("mpiexec") is not None, "mpiexec (MPICH)")
    binary = str(BIN_DIR / "strata-video")
    base = [
        "mpiexec",
        "-n",
        "4",
        binary,
        "--impl",
        "mpi-async-multi",
        "-i",
        str(video),
        "--worker-sleep-ms",
        "40",
    ]
    on_terminal = run([*base, "-o", str(tmp_path / "a.raw")], terminal=True)
    assert on_terminal.code == 0, on_terminal.stderr_text
    assert max(frame_counts(on_terminal.stderr_text, 24)) > 1
    quiet = run([*base, "-o", str(tmp_path / "b.raw"), "--quiet"], terminal=True)
    assert quiet.code == 0, quiet.stderr_text
    assert_no_line(quiet, "strata-video")
    piped = run([*base, "-o", str(tmp_path / "c.raw")], terminal=False)
    assert piped.code == 0, piped.stderr_text
    assert_no_line(piped, "strata-video")
    assert (
        (tmp_path / "a.raw").read_bytes()
        == (tmp_path / "b.raw").read_bytes()
        == (tmp_path / "c.raw").read_bytes()
    )
