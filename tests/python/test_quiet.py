# SPDX-License-Identifier: MIT
"""scripts/quiet: the exclusive lock and the wait for the load that the benchmark reports put before
their commands.

Each test uses a lock file and a load average file of its own (STRATA_QUIET_LOADAVG) in tmp_path, so the
tests do not wait for the machine's real load or for a benchmark that holds the real lock; they assert the
order of events, not how long anything took.
"""

import os
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
QUIET = REPO / "scripts" / "quiet"


def env_with_load(tmp_path: Path, load: str) -> dict[str, str]:
    (tmp_path / "loadavg").write_text(f"{load} 0.50 0.50 1/100 1234\n")
    return os.environ | {"STRATA_QUIET_LOADAVG": str(tmp_path / "loadavg")}


def start(tmp_path: Path, name: str, args: list[str], env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [str(QUIET), "--lock", str(tmp_path / "lock"), *args],
        stderr=open(tmp_path / f"{name}.err", "w"),
        env=env,
    )


def wait_for(predicate, what: str, proc: subprocess.Popen | None = None) -> None:
    """Polls until predicate() holds; fails (not hangs) if proc ends first or after 60 s."""
    deadline = time.monotonic() + 60
    while not predicate():
        assert proc is None or proc.poll() is None, f"ended (status {proc.returncode}) before {what}"
        assert time.monotonic() < deadline, f"no {what} after 60 s"
        time.sleep(0.02)


def test_a_second_command_runs_only_after_the_first_one_ends(tmp_path):
    env = env_with_load(tmp_path, "0.10")
    log, go = tmp_path / "log", tmp_path / "go"
    first = start(
        tmp_path,
        "first",
        [
            "--",
            "sh",
            "-c",
            f"echo first-start >> {log}; while [ ! -e {go} ]; do sleep 0.02; done; echo first-end >> {log}",
        ],
        env,
    )
    wait_for(lambda: log.exists() and "first-start" in log.read_text(), "first command", first)
    second = start(tmp_path, "second", ["sh", "-c", f"echo second >> {log}"], env)
    wait_for(lambda: "waiting for" in (tmp_path / "second.err").read_text(), "second waiting", second)
    assert log.read_text().split() == ["first-start"]  # the second is blocked, not run
    go.touch()
    assert first.wait(60) == 0 and second.wait(60) == 0
    assert log.read_text().split() == ["first-start", "first-end", "second"]


def test_it_waits_for_the_load_to_settle_then_runs_the_command(tmp_path):
    env = env_with_load(tmp_path, "5.00")
    done = tmp_path / "done"
    sut = start(tmp_path, "sut", ["--max-load", "1.5", "--timeout", "0", "touch", str(done)], env)
    wait_for(lambda: "load average 5.00, waiting" in (tmp_path / "sut.err").read_text(), "waiting", sut)
    assert not done.exists()
    (tmp_path / "loadavg").write_text("1.49 2.00 2.00 1/100 1234\n")
    assert sut.wait(60) == 0
    assert done.exists()


def test_a_load_that_does_not_settle_runs_nothing_and_says_why(tmp_path):
    env = env_with_load(tmp_path, "5.00")
    done = subprocess.run(
        [str(QUIET), "--lock", str(tmp_path / "lock"), "--max-load", "1", "--timeout", "1", "touch", "ran"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 75
    assert "load average is still 5.00 (--max-load 1) after --timeout 1 s; not running touch" in done.stderr
    assert not (tmp_path / "ran").exists()


def test_a_signal_while_it_waits_frees_the_lock(tmp_path):
    env = env_with_load(tmp_path, "5.00")
    waiting = start(tmp_path, "waiting", ["--max-load", "1", "--timeout", "0", "true"], env)
    wait_for(lambda: "waiting until" in (tmp_path / "waiting.err").read_text(), "waiting", waiting)
    waiting.terminate()
    waiting.wait(60)
    # The lock is free at once (no child of the script kept it): a command that must not wait gets it.
    done = subprocess.run(
        ["flock", "--nonblock", str(tmp_path / "lock"), "true"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr


def test_bad_arguments_and_a_symlinked_lock_are_refused_naming_them(tmp_path):
    env = env_with_load(tmp_path, "0.10")
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    cases = [
        (["--max-load", "lots", "true"], "--max-load=lots: expected a number"),
        (["--timeout", "-1", "true"], "--timeout=-1: expected whole seconds"),
        (["--lock", str(tmp_path / "link"), "true"], f"--lock={tmp_path / 'link'}: is a symbolic link"),
        (["--max-load"], "--max-load=: expected a value after it"),
        ([], "COMMAND=: no command to run"),
    ]
    for args, message in cases:
        done = subprocess.run([str(QUIET), *args], capture_output=True, text=True, env=env, timeout=60)
        assert done.returncode == 2 and message in done.stderr, (args, done.stderr)
    assert not (tmp_path / "elsewhere").exists()
