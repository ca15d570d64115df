#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Out of core: rma_counter (an MPI program that knows nothing about strata)
# with a window twice the memory its job may use. The two ranks run in a
# memory cgroup of 64 MiB; each allocates a 128 MiB window. In memory, the
# kernel's OOM killer ends the job; with libstrata-mpi preloaded and the
# windows on storage (STRATA_MPI_WINDOW_HINTS), the kernel writes pages back
# to the files and the job completes. Needs root (cgroup v1 memory at
# /sys/fs/cgroup/memory: scripts/kernel-setup).
#
#   examples/mpi/out_of_core.sh        (as root, from the repository, after the default build)
#
# STRATA_BIN_DIR / STRATA_LIB_DIR name the build's bin/ and lib/ (default build/default/...).
set -euo pipefail
bin=$(realpath "${STRATA_BIN_DIR:-build/default/bin}")
lib=$(realpath "${STRATA_LIB_DIR:-build/default/lib}")
counters=$((16 << 20)) # 16 Mi counters of 8 bytes: 128 MiB per rank
work=$(mktemp -d)
group=/sys/fs/cgroup/memory/strata-example-ooc-$$
# Ends what the run left in the group (ranks the OOM killer did not reach), then removes it.
cleanup() {
  if [[ -d $group ]]; then
    for _ in 1 2 3; do
      pids=$(cat "$group/cgroup.procs" 2>/dev/null) || break
      [[ -z $pids ]] && break
      # shellcheck disable=SC2086
      kill -KILL $pids 2>/dev/null || true
      sleep 0.5
    done
    for _ in $(seq 50); do rmdir "$group" 2>/dev/null && break; sleep 0.1; done
  fi
  rm -rf "$work"
}
trap cleanup EXIT
mkdir "$group"
echo $((64 << 20)) > "$group/memory.limit_in_bytes"
echo $((64 << 20)) > "$group/memory.memsw.limit_in_bytes" 2>/dev/null || true # no swap either, where accounted

# in_group COMMAND...: runs COMMAND with its whole process tree in the group.
in_group() { sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$group" "$@"; }

echo "2 ranks, a 128 MiB window each, in a 64 MiB memory cgroup:"
if in_group mpiexec -n 2 "$bin/rma_counter" "$counters" > "$work/memory.log" 2>&1; then
  echo "  in memory:  completed (the limit did not hold?)"
  exit 1
fi
kills=$(awk '$1 == "oom_kill" { print $2 }' "$group/memory.oom_control")
if ((kills == 0)); then
  echo "  in memory:  failed, but not by the OOM killer:" >&2
  cat "$work/memory.log" >&2
  exit 1
fi
echo "  in memory:  killed by the OOM killer"
in_group env STRATA_MPI_WINDOW_HINTS="alloc_type=storage,storage_alloc_filename=$work/%k-%r.dat" \
  mpiexec -n 2 -genv LD_PRELOAD "$lib/libstrata-mpi.so.0" "$bin/rma_counter" "$counters" > "$work/storage.log"
echo "  on storage: $(cat "$work/storage.log")"
