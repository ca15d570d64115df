#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Why shm beat threads under load: scatter-gather(6), 10 MB, threads against shm, first where started
# (under Linux's autogroup: one CPU share per session), then inside a cpu cgroup of its own (where
# autogroup does not apply), with six busy loops in sessions of their own as the load. Prints one line
# per run: where, method, iterations/s. Needs root and cgroup v1 cpu; removes the group and the loops on
# every exit. A probe (docs/benchmarks/shared-objects/README.md), not a benchmark.
# Usage: bench/shared-objects/autogroup_probe.sh [STRATA] [RUNS]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
strata=${1:-build/default/bin/strata} runs=${2:-2}
cpu=/sys/fs/cgroup/cpu group=/sys/fs/cgroup/cpu/strata-autogroup-probe-$$
loops=()
cleanup() {
  local status=$?
  trap - EXIT INT TERM
  ((${#loops[@]})) && kill "${loops[@]}" 2>/dev/null
  strata_bench_remove_cgroup "$group" "$cpu"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
echo "sched_autogroup_enabled=$(cat /proc/sys/kernel/sched_autogroup_enabled)"
for _ in 1 2 3 4 5 6; do
  setsid bash -c 'while :; do :; done' &
  loops+=($!)
done
run() {
  "$strata" run --json --shape scatter-gather --tasks 6 --method "$1" --data-size 10485760 --iterations 60 |
    python3 -c "import json, sys; print(round(json.load(sys.stdin)['iterations_per_s'], 1))"
}
for where in started cgroup; do
  if [[ $where == cgroup ]]; then
    mkdir "$group"
    echo 32768 > "$group/cpu.shares"
    echo $$ > "$group/cgroup.procs"
  fi
  for ((i = 0; i < runs; ++i)); do
    for method in threads shm; do
      echo "$where $method $(run "$method") iterations/s"
    done
  done
done
