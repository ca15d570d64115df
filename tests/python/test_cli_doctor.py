# SPDX-License-Identifier: MIT
"""End-to-end tests of `strata doctor`: runs the built binary as a user would.

The binary comes from $STRATA_BIN, else <repo>/build/default/bin/strata.
Capabilities the machine may lack are only asserted "ok" when the test runs as
root, where this project's machines provide all of them.
"""

import fcntl
import json
import mmap
import os
import re
import subprocess
from pathlib import Path

import pytest
from capability import require

REPO = Path(__file__).resolve().parents[2]
STRATA_BIN = Path(os.environ.get("STRATA_BIN", REPO / "build" / "default" / "bin" / "strata"))

CAPABILITIES = [
    "fuse",
    "bpf",
    "monitor",
    "cma",
    "memfd",
    "userfaultfd",
    "shm",
    "mpi",
    "zeromq",
    "external-exposure",
    "loop-devices",
    "netns",
    "syscall-counter",
    "container",
    "cgroup-cpu",
    "cgroup-memory",
    "cgroup-blkio",
    "cgroup-cpuset",
]
REQUIRED = {"fuse", "memfd", "shm", "mpi", "zeromq"}
OK_AS_ROOT = [
    "fuse",
    "bpf",
    "monitor",
    "memfd",
    "shm",
    "mpi",
    "zeromq",
    "external-exposure",
    "loop-devices",
    "syscall-counter",
    "container",
]
STATUSES = {"ok", "degraded", "missing"}
# Every probe is bounded (the slowest, mpi, by 10 s); this catches a hang.
TIMEOUT_S = 60


def run_doctor(*args):
    require(STRATA_BIN.exists(), f"{STRATA_BIN} (build it, or set STRATA_BIN)")
    return subprocess.run(
        [str(STRATA_BIN), "doctor", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


@pytest.fixture(scope="module")
def json_run():
    return run_doctor("--json")


@pytest.fixture(scope="module")
def text_run():
    return run_doctor()


@pytest.fixture(scope="module")
def report(json_run):
    return json.loads(json_run.stdout)


@pytest.fixture(scope="module")
def by_name(report):
    return {c["name"]: c for c in report["capabilities"]}


def test_json_output_is_one_valid_document(json_run):
    document = json.loads(json_run.stdout)
    assert isinstance(document, dict)
    assert set(document) == {"version", "ok", "capabilities"}


def test_json_reports_the_strata_version(report):
    assert re.fullmatch(r"\d+\.\d+\.\d+", report["version"])


def test_every_capability_is_listed_exactly_once(report):
    names = [c["name"] for c in report["capabilities"]]
    assert sorted(names) == sorted(CAPABILITIES)


def test_every_capability_has_status_required_detail_and_fix(report):
    for capability in report["capabilities"]:
        assert set(capability) == {"name", "status", "required", "detail", "fix"}
        assert capability["status"] in STATUSES
        assert isinstance(capability["required"], bool)
        assert isinstance(capability["detail"], str) and capability["detail"]
        assert isinstance(capability["fix"], str)


def test_a_capability_that_is_not_ok_says_how_to_fix_it(report):
    for capability in report["capabilities"]:
        if capability["status"] != "ok":
            assert capability["fix"], capability


def test_the_defaults_require_exactly_fuse_memfd_shm_mpi_and_zeromq(by_name):
    assert {name for name, c in by_name.items() if c["required"]} == REQUIRED


def test_exit_code_is_zero_exactly_when_every_required_capability_is_present(json_run, report):
    present = all(c["status"] != "missing" for c in report["capabilities"] if c["required"])
    assert report["ok"] is present
    assert json_run.returncode == (0 if present else 1)


@pytest.mark.parametrize("name", OK_AS_ROOT)
def test_capabilities_of_this_machine_are_ok_when_run_as_root(by_name, name):
    require(os.geteuid() == 0, "root (the capabilities are only guaranteed to root)")
    assert by_name[name]["status"] == "ok", by_name[name]


def test_text_output_prints_one_line_per_capability(text_run):
    result = text_run
    lines = result.stdout.splitlines()
    for name in CAPABILITIES:
        pattern = re.compile(rf"^\s+(ok|degraded|missing)\s+{re.escape(name)}\s+(required|optional)\s+\S")
        matching = [line for line in lines if pattern.match(line)]
        assert len(matching) == 1, (name, result.stdout)


def test_text_output_has_a_fix_line_under_each_capability_that_is_not_ok(text_run):
    result = text_run
    lines = result.stdout.splitlines()
    for index, line in enumerate(lines):
        if re.match(r"^\s+(degraded|missing)\s", line):
            assert lines[index + 1].strip().startswith("fix: "), result.stdout


def test_text_and_json_modes_agree_on_the_exit_code(text_run, json_run):
    assert text_run.returncode == json_run.returncode


def memfd_sealing_works() -> bool:
    """Whether a memfd mapped writable takes F_SEAL_FUTURE_WRITE, checked here without strata."""
    f_seal_future_write = 0x0010  # linux/fcntl.h
    fd = os.memfd_create("strata-doctor-test", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        os.ftruncate(fd, 4096)
        with mmap.mmap(fd, 4096, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE):
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, f_seal_future_write)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def test_external_exposure_says_which_exposure_auto_picks_and_why(by_name):
    detail = by_name["external-exposure"]["detail"]
    if memfd_sealing_works():
        assert detail.startswith("auto picks memfd: "), detail
        assert "F_SEAL_FUTURE_WRITE" in detail, detail
    else:
        assert detail.startswith(("auto picks fuse: ", "auto picks none: ")), detail
    assert "exposure=fuse" in detail, detail
