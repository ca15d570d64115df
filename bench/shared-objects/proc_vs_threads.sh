#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Processes against threads for the same work without strata (issue 29): runs
# bench_shared_objects_proc_vs_threads (proc_vs_threads.c) as threads and as forked processes,
# interleaved, for simple(2), pipeline(4) and scatter-gather(6) at 10 MB, and writes results.json
# and README.md (medians, the ratio processes / threads per shape, context switches) to --out.
# Builds nothing: build first with
#   cmake --build --preset default --target bench_shared_objects_proc_vs_threads
#
# Usage: bench/shared-objects/proc_vs_threads.sh [--repeats N] [--out DIR]
#   --repeats N  runs of every configuration, each repeat in a fresh random order (default 11)
#   --out DIR    where the report goes (default docs/benchmarks/shared-objects/proc-vs-threads in a
#                source tree, else ./strata-bench-proc-vs-threads)
# Run as root it runs inside a cpu cgroup of its own (cgroup v1, cpu.shares=32768, removed on every
# exit), as bench/shared-objects/run --ratios does, so that autogroup weighs neither vehicle; the
# report records the cgroup (null: it ran where it was started).
# Environment: STRATA_BIN_DIR, STRATA_VENV as for bench/shared-objects/run.
set -euo pipefail

# shellcheck source=SCRIPTDIR/../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
strata_bench_init shared-objects
me=bench/shared-objects/proc_vs_threads.sh
given=("$@")

repeats=11
out=""
while (($#)); do
  case "$1" in
    --repeats|--out) (($# >= 2)) || { echo "$me: $1 needs a value (see --help)" >&2; exit 2; } ;;&
    --repeats) repeats=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --repeats=*) repeats=${1#*=}; shift ;;
    --out=*) out=${1#*=}; shift ;;
    -h|--help) strata_bench_usage; exit 0 ;;
    *) echo "$me: $1: unknown option (see --help)" >&2; exit 2 ;;
  esac
done
if ! [[ $repeats =~ ^[1-9][0-9]{0,3}$ ]]; then
  echo "$me: --repeats=$repeats: expected a whole number from 1 to 9999" >&2
  exit 2
fi
if [[ -z $out ]]; then
  if [[ -n "$root" ]]; then out="$root/docs/benchmarks/shared-objects/proc-vs-threads"; else out="$PWD/strata-bench-proc-vs-threads"; fi
fi
if [[ ! -x "$bin_dir/bench_shared_objects_proc_vs_threads" ]]; then
  echo "$me: $bin_dir/bench_shared_objects_proc_vs_threads not found; build it first:" >&2
  echo "  cmake --build --preset default --target bench_shared_objects_proc_vs_threads" >&2
  echo "  (or set STRATA_BIN_DIR to the directory that has it)" >&2
  exit 1
fi
mkdir -p "$out"

cpu=/sys/fs/cgroup/cpu
group=""
py=""
# On every exit: ends the Python driver (which ends its run) if a signal cut it short, then leaves
# the cgroup, ends by pid whatever is left in it (only this run's processes) and removes it.
# shellcheck disable=SC2317  # reached through the EXIT trap
on_exit() {
  local status=$?
  trap - EXIT INT TERM
  if [[ -n $py ]] && kill -TERM "$py" 2>/dev/null; then
    wait "$py" 2>/dev/null || true
  fi
  if [[ -n $group ]]; then
    echo $$ > "$cpu/cgroup.procs" 2>/dev/null || true
    strata_bench_kill_cgroup "$group"
  fi
  exit "$status"
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
export STRATA_BENCH_CPU_CGROUP=""
if [[ "$(id -u)" == 0 && -w "$cpu/cgroup.procs" ]]; then
  group="$cpu/strata-proc-vs-threads-$$"
  mkdir "$group"
  echo 32768 > "$group/cpu.shares"
  echo $$ > "$group/cgroup.procs"
  STRATA_BENCH_CPU_CGROUP="$group"
fi
command=${STRATA_BENCH_COMMAND:-$me${given[*]:+ ${given[*]}}}
# In the background, so that a signal runs the traps at once rather than after the driver ends.
"$python" "$here/proc_vs_threads.py" --exe "$bin_dir/bench_shared_objects_proc_vs_threads" \
  --repeats "$repeats" --out "$out" --command "$command" &
py=$!
status=0
wait "$py" || status=$?
py=""
exit "$status"
