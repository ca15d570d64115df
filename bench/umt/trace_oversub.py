# SPDX-License-Identifier: MIT
"""Where a UMT run's oversubscribed time goes, from a `perf sched record` trace.

    perf sched record -o trace.data -- env STRATA_MONITOR=ebpf STRATA_COVER_PRIORITY=idle strata-umt-fwi ...
    perf script -i trace.data -F comm,tid,cpu,time,event,trace > trace.txt
    python3 bench/umt/trace_oversub.py trace.txt [--label NAME]   # one JSON line on stdout

Rebuilds each worker's state from sched_switch / sched_waking (a worker is a
thread named strata-w<cpu>; blocked from a switch-out in a sleeping state to
its waking) and charges every interval in which a core had more than one ready
worker to what ran on its CPU: the worker woken last ("woken"), another worker
("cover"), or any other thread. Time in which the cover ran is split by what
came before: the woken worker had not run yet since its wakeup, or it had
run and was switched out while still runnable (by which thread). Also the
wake-to-run delay of every wakeup that found another ready worker.

A diagnostic, not the benchmark's measure: the monitor's own figure (BPF,
results.json) counts a worker ready from its wakeup on, as this does.
"""

import argparse
import collections
import json
import re
import statistics

SWITCH = re.compile(
    r"\[(\d+)\]\s+([\d.]+):\s+sched:sched_switch: prev_comm=(.*?) prev_pid=(\d+) prev_prio=\d+ "
    r"prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)"
)
WAKING = re.compile(r"^\s*(.*?)\s+\d+ \[(\d+)\]\s+([\d.]+):\s+sched:sched_waking: comm=.*? pid=(\d+) ")
RUNNING_STATES = ("R", "R+")


def analyse(path):
    workers, state = {}, {}
    running, woken, last, after = {}, {}, {}, {}
    charged = collections.Counter()
    cover_by_cause = collections.Counter()
    woke_at, delays = {}, []

    def ready(cpu):
        return sum(1 for tid, s in state.items() if workers.get(tid) == cpu and s == "R")

    def charge(cpu, t):
        if last.get(cpu) is not None and ready(cpu) > 1:
            d = t - last[cpu]
            who = running.get(cpu)
            if who in workers and who == woken.get(cpu):
                charged["woken worker runs"] += d
            elif who in workers:
                charged["cover runs"] += d
                cover_by_cause[after.get(cpu, "unknown")] += d
            else:
                charged["another thread runs"] += d
            charged["total"] += d
        last[cpu] = t

    for line in open(path, encoding="utf-8", errors="replace"):
        m = SWITCH.search(line)
        if m:
            cpu, t = int(m[1]), float(m[2])
            prev_comm, prev, prev_state, next_comm, nxt = m[3], int(m[4]), m[5], m[6], int(m[7])
            for comm, tid in ((prev_comm, prev), (next_comm, nxt)):
                if comm.startswith("strata-w") and tid not in workers:
                    workers[tid] = int(comm[len("strata-w") :])
                    state.setdefault(tid, "R")
            charge(cpu, t)
            if nxt in woke_at:
                delays.append(t - woke_at.pop(nxt))
            if nxt == woken.get(cpu):
                after[cpu] = "the woken worker had run"
            if prev == woken.get(cpu) and prev_state in RUNNING_STATES:
                after[cpu] = "the woken worker was switched out for " + next_comm.split("/")[0]
            if prev in workers and prev_state not in RUNNING_STATES:
                state[prev] = "B"
            running[cpu] = nxt
            continue
        m = WAKING.search(line)
        if m:
            t, tid = float(m[3]), int(m[4])
            if tid in workers and state.get(tid) == "B":
                cpu = workers[tid]
                charge(cpu, t)
                state[tid] = "R"
                if ready(cpu) > 1:
                    woken[cpu] = tid
                    after[cpu] = "the woken worker had not run yet"
                    woke_at[tid] = t
    delays.sort()
    n = len(delays)
    long_ = [d for d in delays if d > 1e-3]
    return {
        "oversubscribed_ms": 1e3 * charged["total"],
        "share_ms": {k: 1e3 * v for k, v in charged.items() if k != "total"},
        "cover_runs_by_cause_ms": {k: 1e3 * v for k, v in cover_by_cause.most_common()},
        "oversubscribing_wakeups": n,
        "wake_to_run_median_us": 1e6 * statistics.median(delays) if n else None,
        "wake_to_run_p90_us": 1e6 * delays[int(0.9 * n)] if n else None,
        "wake_to_run_sum_ms": 1e3 * sum(delays),
        "wake_to_run_over_1ms": len(long_),
        "wake_to_run_over_1ms_sum_ms": 1e3 * sum(long_),
    }


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("trace", help="perf script output (comm,tid,cpu,time,event,trace)")
    parser.add_argument("--label", default="")
    args = parser.parse_args()
    print(json.dumps(dict(analyse(args.trace), label=args.label)))


if __name__ == "__main__":
    main()
