# SPDX-License-Identifier: MIT
"""Running a command on emulated nodes (apps/video/emulate) and finding what that run left.

emulate names everything it makes after its own pid (namespaces and links `sv<pid>…`, the cgroup
`strata-emulate-<pid>`), so a test looks only at its own run's names: other emulations (another
test run, a benchmark) may run beside it on a shared machine and are none of its business.
"""

import subprocess
from dataclasses import dataclass
from pathlib import Path

from conftest import REPO

EMULATE = REPO / "apps" / "video" / "emulate"


@dataclass
class Emulated:
    """One finished emulate run: its exit code, output and pid (the key of its names)."""

    returncode: int
    stdout: str
    stderr: str
    pid: int


def run_emulated(args: list[str], timeout: float) -> Emulated:
    """Run `emulate <args>` to its end (killed and reaped on timeout, then the timeout is raised)."""
    proc = subprocess.Popen([str(EMULATE), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    return Emulated(proc.returncode, out, err, proc.pid)


def emulation_leftovers(emulate_pid: int) -> list[str]:
    """The namespaces, links and cgroups of the emulate run `emulate_pid` that still exist."""
    tag = f"sv{emulate_pid}"[:8]
    found = []
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    found += [f"namespace {line.split()[0]}" for line in netns.splitlines() if line.startswith(tag)]
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    found += [f"link {line.split(':')[1].strip()}" for line in links.splitlines() if f": {tag}" in line]
    for hierarchy in ("cpu", "cpuacct"):  # cpuacct: the nodes' CPU time, where it is a hierarchy of its own
        cgroup = Path(f"/sys/fs/cgroup/{hierarchy}/strata-emulate-{emulate_pid}")
        found += [f"cgroup {cgroup}"] if cgroup.exists() else []
    return found
