#!/bin/sh
# SPDX-License-Identifier: MIT
# STRATA_MPI_WINDOW_HINTS is strata's own variable: a key it does not know (a
# typo) is an error naming the key and the known keys, not ignored. When a
# collective allocation fails under MPI's default fatal error handler, the
# agreed message is printed once, by one rank, before that rank aborts the
# job (the other ranks wait for the abort instead of racing it). Each case
# runs three times: which rank aborts first varies from run to run.
# Usage: window_hints_errors_are_named_and_printed_once.sh MPIEXEC NP PROGRAM LIBRARY
set -eu
mpiexec=$1 np=$2 program=$3 library=$4
dir=$(mktemp -d /tmp/strata-mpi-once-XXXXXX)
trap 'rm -rf "$dir"' EXIT
die() { echo "FAILED: $*"; cat "$dir/out"; exit 1; }
fails_once() { # fails_once TEXT HINTS: the run fails, and TEXT is on exactly one line of its output
    text=$1 hints=$2
    for attempt in 1 2 3; do
        if STRATA_MPI_WINDOW_HINTS_SCOPE=win_allocate STRATA_MPI_WINDOW_HINTS="$hints" \
            "$mpiexec" -n "$np" -genv LD_PRELOAD "$library" "$program" run > "$dir/out" 2>&1; then
            die "STRATA_MPI_WINDOW_HINTS='$hints' was accepted"
        fi
        n=$(grep -cF "$text" "$dir/out" || true)
        [ "$n" -eq 1 ] || die "attempt $attempt: '$text' printed $n times, expected once"
    done
}

# A typo in a key: named, with the known keys.
fails_once "MPI_Win_allocate: rank 0 ($(hostname)): STRATA_MPI_WINDOW_HINTS=alloc_typ=storage: unknown key 'alloc_typ' (known keys: alloc_type, storage_alloc_filename, storage_alloc_offset, storage_alloc_factor, storage_alloc_order, storage_alloc_unlink, storage_alloc_discard, storage_alloc_sync, storage_alloc_allow_other_owner, storage_alloc_remote_sync, access_style, file_perm, striping_factor, striping_unit, alloc_shared_noncontig)" \
    "alloc_typ=storage,storage_alloc_filename=$dir/w-%r.dat"
# A bad value, the same on every rank.
fails_once "MPI_Win_allocate: rank 0 ($(hostname)): storage_alloc_factor=1.5: " \
    "alloc_type=storage,storage_alloc_filename=$dir/w-%r.dat,storage_alloc_factor=1.5"
# strata's other variable of async windows: a bad period, named.
STRATA_MPI_FLUSH_INTERVAL_MS=soon fails_once "MPI_Win_allocate: rank 0 ($(hostname)): STRATA_MPI_FLUSH_INTERVAL_MS=soon: not a whole number of milliseconds" \
    "alloc_type=storage,storage_alloc_filename=$dir/w-%r.dat,storage_alloc_sync=async"
# One rank fails (its directory is missing): its message, printed once.
r=0
while [ $r -lt $((np - 1)) ]; do mkdir -p "$dir/$r"; r=$((r + 1)); done
last=$((np - 1))
fails_once "MPI_Win_allocate: rank $last ($(hostname)): storage_alloc_filename=$dir/$last/w.dat: " \
    "alloc_type=storage,storage_alloc_filename=$dir/%r/w.dat"
[ -z "$(find "$dir" -name '*.dat')" ] || { find "$dir"; die "files left behind by failed runs"; }

# Unknown keys in an MPI_Info stay ignored, as MPI requires (plain_mpi_windows
# passes MPI_INFO_NULL, so this is checked by the C tests' infos); the
# environment's known keys still work after the checks above.
STRATA_MPI_WINDOW_HINTS_SCOPE=win_allocate STRATA_MPI_WINDOW_HINTS="alloc_type=storage,storage_alloc_filename=$dir/w-%r-%w.dat" \
    "$mpiexec" -n "$np" -genv LD_PRELOAD "$library" "$program" run > "$dir/out" 2>&1 || die "valid hints failed"
echo "STRATA_MPI_WINDOW_HINTS errors: named, and printed once"
