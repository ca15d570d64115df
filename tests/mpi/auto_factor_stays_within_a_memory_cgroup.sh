#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs the job inside a 256 MiB cgroup v1 memory group made for it: the
# driver moves itself in (mpiexec and the ranks inherit it) and removes the
# group on every exit path. Needs root and the v1 memory controller.
# Usage: auto_factor_stays_within_a_memory_cgroup.sh MPIEXEC NP PROGRAM LIBRARY
set -eu
mpiexec=$1 np=$2 program=$3
limit=$((256 * 1024 * 1024))
root=/sys/fs/cgroup/memory
missing() {
    if [ "${CI:-}" = true ]; then echo "missing capability (a failure in CI): $1"; exit 1; fi
    echo "skipped, missing capability: $1"; exit 77
}
[ "$(id -u)" -eq 0 ] || missing "root, to create a memory cgroup"
[ -w "$root/cgroup.procs" ] && [ -r "$root/memory.limit_in_bytes" ] || missing "cgroup v1 memory controller at $root"
group=$root/strata-mpi-auto-$$
dir=$(mktemp -d /tmp/strata-mpi-auto-XXXXXX)
cleanup() {
    echo $$ > "$root/cgroup.procs" 2>/dev/null || true
    tries=0
    while [ -d "$group" ] && ! rmdir "$group" 2>/dev/null && [ $tries -lt 50 ]; do sleep 0.1; tries=$((tries + 1)); done
    [ -d "$group" ] && echo "could not remove $group"
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
mkdir "$group"
echo "$limit" > "$group/memory.limit_in_bytes"
echo $$ > "$group/cgroup.procs"
"$mpiexec" -n "$np" "$program" "$limit" "$dir"
kills=$(awk '$1 == "oom_kill" { print $2 }' "$group/memory.oom_control")
[ "${kills:-0}" -eq 0 ] || { echo "$kills processes were OOM-killed in the group"; exit 1; }
echo "peak usage of the group: $(($(cat "$group/memory.max_usage_in_bytes") >> 20)) MiB of $((limit >> 20)) MiB"
