# SPDX-License-Identifier: MIT
"""One two-node UMT job inside apps/video/emulate (bench/umt/nodes.py runs it as emulate's COMMAND).

Launches one rank per emulated node with the emulation's mpiexec, each rank
bound to a CPU of its own (taskset: the node's one core, which the runtime's
`auto` cover priority takes for a core the job owns), samples every node's
CPU time (its cpuacct group, STRATA_EMU_CPUACCT) while the job runs, and
prints one line: UMT_NODES {"results": [the ranks' UMT_RESULT objects],
"samples": [[t, ns of node 0, ns of node 1, ...], ...], "returncode": ...}.

    nodes_job.py SPEC_JSON   (SPEC: program, args, env, cpus, interval_s, timeout_s)
"""

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

RESULT_PREFIX = "UMT_RESULT "


def usage_ns(groups):
    return [int(Path(group, "cpuacct.usage").read_text()) for group in groups]


def main():
    spec = json.loads(sys.argv[1])
    nodes = os.environ["STRATA_EMU_NODES"].split()
    groups = os.environ.get("STRATA_EMU_CPUACCT", "").split()
    if len(groups) != len(nodes):
        sys.exit("nodes_job.py: the emulation has no cpuacct group per node (STRATA_EMU_CPUACCT)")
    command = [*shlex.split(os.environ["STRATA_EMU_MPIEXEC"]), "-hosts", ",".join(nodes)]
    for name, value in spec["env"].items():
        command += ["-genv", name, value]
    for i, cpu in enumerate(spec["cpus"][: len(nodes)]):
        command += [
            *([":"] if i else []),
            "-n",
            "1",
            "taskset",
            "-c",
            str(cpu),
            spec["program"],
            *spec["args"],
        ]
    samples = []
    started = time.monotonic()
    job = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # noqa: S603
    while job.poll() is None:
        samples.append([time.monotonic() - started, *usage_ns(groups)])
        if time.monotonic() - started > spec["timeout_s"]:
            job.kill()
            break
        time.sleep(spec["interval_s"])
    out, err = job.communicate()
    samples.append([time.monotonic() - started, *usage_ns(groups)])
    results = [json.loads(x[len(RESULT_PREFIX) :]) for x in out.splitlines() if x.startswith(RESULT_PREFIX)]
    document = {
        "results": sorted(results, key=lambda r: r.get("rank", 0)),
        "samples": samples,
        "returncode": job.returncode,
        "command": " ".join(command),
        "output": "" if job.returncode == 0 else (out[-2000:] + err[-2000:]),
    }
    print("UMT_NODES " + json.dumps(document), flush=True)


if __name__ == "__main__":
    main()
