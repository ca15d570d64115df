# SPDX-License-Identifier: MIT
"""Boundaries seen from Python: read-only arrays, forks, error messages, Port's sync values."""

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

# A hang bound for a wait on a dead peer: far beyond the 20 ms liveness tick and any delay load adds.
PEER_WAIT_S = 20


def _cli_segments(directory):
    """`strata shm ls --json` for `directory`: name -> users alive."""
    out = subprocess.run(
        [
            os.environ.get("STRATA_BIN", "build/default/bin/strata"),
            "shm",
            "ls",
            "--json",
            "--dir",
            str(directory),
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return {s["name"]: s["users_alive"] for s in json.loads(out)["segments"]}


def test_arrays_of_a_read_only_segment_are_not_writeable_and_a_write_raises_value_error(
    strata_module, segment_name, tmp_path
):
    strata = strata_module
    with strata.Segment(segment_name, "create_only", 16 << 20, dir=str(tmp_path)) as seg:
        a = seg.vector("v", np.float64, 8)
        a[:] = 1.5
        # A write that reached the PROT_READ mapping would kill the interpreter
        # (SIGSEGV): try it in a child so the failure is a result, not a crash.
        script = textwrap.dedent(
            f"""
            import numpy as np, strata
            ro = strata.Segment({segment_name!r}, "read_only", dir={str(tmp_path)!r})
            b = ro.find("v", np.float64)
            assert not b.flags.writeable, "a read-only segment's array is writeable"
            assert b[3] == 1.5
            try:
                b[0] = 2.0
            except ValueError as e:
                print("ValueError:", e)
            h = ro.save(b)
            c = ro.load(h)
            assert not c.flags.writeable
            del b, c
            ro.close()
            """
        )
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, f"exit {done.returncode}: {done.stderr}"
        assert "ValueError: assignment destination is read-only" in done.stdout
        assert a[0] == 1.5
        del a


def test_error_messages_keep_nul_and_non_ascii_characters(strata_module, segment_name, tmp_path):
    strata = strata_module
    with strata.Segment(segment_name, "create_only", 16 << 20, dir=str(tmp_path)) as seg:
        with pytest.raises(ValueError) as nul:
            seg.find("a\0b", np.float64)
        assert "name='a\0b'" in str(nul.value)
        with pytest.raises(strata.Error) as missing:
            seg.find("température-ü", np.float64)
        assert missing.value.code == "not_found"
        assert "température-ü" in str(missing.value)
    with pytest.raises(ValueError) as bad:
        strata.Segment("bad-ü", dir=str(tmp_path))
    # The name is kept whole; the lone byte the message quotes is escaped, not a decoding error.
    assert "bad-ü" in str(bad.value)
    assert "\\xc3" in str(bad.value)


def test_the_port_docstring_spells_the_sync_values_the_code_accepts(strata_module, segment_name, tmp_path):
    strata = strata_module
    doc = strata.Port.__doc__
    for value in ("blocking", "busy_poll", "mpi"):
        assert f'"{value}"' in doc
    assert "busy-poll" not in doc
    with strata.Segment(segment_name, "create_only", 16 << 20, dir=str(tmp_path)) as seg:
        with seg.port("p", "producer", sync="busy_poll"), seg.port("q", "producer", sync="blocking"):
            pass
        with pytest.raises(ValueError, match="sync=busy-poll"):
            seg.port("r", "producer", sync="busy-poll")


def _child_reads_and_drops_its_copy(seg, queue):
    try:
        seg.find("v", np.int64)
        queue.put("find worked in a forked child")
    except ValueError as e:
        queue.put("refused" if "forked" in str(e) else f"wrong error: {e}")
    seg._seg.close()  # closing the child's copy must not detach the parent


def test_a_multiprocessing_fork_child_neither_detaches_nor_keeps_alive_its_parent(
    strata_module, segment_name, tmp_path
):
    strata = strata_module
    ctx = multiprocessing.get_context("fork")
    with strata.Segment(segment_name, "create_only", 16 << 20, dir=str(tmp_path)) as seg:
        seg.vector("v", np.int64, 4)[:] = 9  # no array stays alive, so the child may close its copy
        queue = ctx.Queue()
        child = ctx.Process(target=_child_reads_and_drops_its_copy, args=(seg, queue))
        child.start()
        child.join(30)
        assert child.exitcode == 0
        assert queue.get(timeout=5) == "refused"
        assert _cli_segments(tmp_path) == {segment_name: 1}, "the parent is still the one live user"
        assert os.path.exists(seg.path)
        assert seg.find("v", np.int64)[3] == 9


def test_a_killed_parent_is_reported_dead_while_its_multiprocessing_fork_child_lives(
    strata_module, segment_name, tmp_path
):
    strata = strata_module
    script = textwrap.dedent(
        f"""
        import multiprocessing, sys, time, strata
        seg = strata.Segment({segment_name!r}, "open_only", dir={str(tmp_path)!r})
        out = seg.port("p", "producer")
        child = multiprocessing.get_context("fork").Process(target=time.sleep, args=(60,))
        child.start()
        print(child.pid, flush=True)
        time.sleep(60)
        """
    )
    with strata.Segment(segment_name, "create_only", 16 << 20, dir=str(tmp_path)) as seg:
        with seg.port("p", "consumer") as inbox:
            parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
            child_pid = int(parent.stdout.readline())
            try:
                parent.kill()
                parent.wait()
                start = time.monotonic()
                with pytest.raises(strata.Error) as died:
                    inbox.recv(timeout=PEER_WAIT_S)
                waited = time.monotonic() - start
            finally:
                os.kill(child_pid, signal.SIGKILL)
            assert died.value.code == "peer_dead", str(died.value)
            assert f"pid {parent.pid}" in str(died.value)
            # Noticed by the 20 ms liveness tick while waiting, not when the wait ran out.
            assert waited < PEER_WAIT_S / 2
