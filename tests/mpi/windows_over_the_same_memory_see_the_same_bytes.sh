#!/bin/sh
# SPDX-License-Identifier: MIT
# Windows over memory another window also exposes see the same bytes (issue
# 31): overlapping_windows (an unmodified program) under LD_PRELOAD, for each
# memory it makes windows over — a storage shared window, a storage or
# combined MPI_Alloc_mem allocation, a file the program maps itself — with
# storage defaults, combined defaults (storage_alloc_factor=0.5), and no
# hints. STRATA_LOG=info proves the placement each run was meant to test.
# Usage: windows_over_the_same_memory_see_the_same_bytes.sh MPIEXEC NP PROGRAM LIBRARY
set -eu
mpiexec=$1 np=$2 program=$3 library=$4
dir=$(mktemp -d /tmp/strata-mpi-overlap-XXXXXX)
trap 'rm -rf "$dir"' EXIT
if ldd "$program" | grep -q strata; then echo "$program must not link strata"; exit 1; fi
die() { echo "FAILED: $*"; cat "$dir/out"; exit 1; }
run() { # run PLACEMENT MODE [ARG]: PLACEMENT is storage, combined or none
    placement=$1
    shift
    rm -f "$dir"/*.dat
    case $placement in
    storage) hints="alloc_type=storage,storage_alloc_filename=$dir/%k-%r-%w.dat" ;;
    combined) hints="alloc_type=storage,storage_alloc_filename=$dir/%k-%r-%w.dat,storage_alloc_factor=0.5" ;;
    none) hints="" ;;
    esac
    env ${hints:+STRATA_MPI_WINDOW_HINTS=$hints} STRATA_MPI_WINDOW_HINTS_SCOPE=all STRATA_LOG=info \
        "$mpiexec" -n "$np" -genv LD_PRELOAD "$library" "$program" "$@" > "$dir/out" 2>&1 ||
        die "$* with $placement placement"
    grep -q "^$1: every window saw the same bytes" "$dir/out" || die "$* with $placement placement: no verdict"
}
expect_log() { grep -qF "$1" "$dir/out" || die "not in the log: $1"; }
bytes=$(((5 * 1024 + 3) * 4))

for placement in storage combined; do
    run $placement shared
    expect_log "MPI_Win_allocate_shared: rank 0: shared window 0: 16 bytes: 0 in memory, 16 on storage at offset 0 of $dir/shm-0-0.dat"
    run $placement alloc_mem
    run $placement mapped "$dir"
    expect_log "MPI_Win_create: rank 0: window: $bytes bytes in memory (the program's own memory"
done
run storage alloc_mem
expect_log "MPI_Alloc_mem: rank 0: allocation 0: $bytes bytes: 0 in memory, $bytes on storage in $dir/mem-0-0.dat"
run combined alloc_mem
expect_log "MPI_Alloc_mem: rank 0: allocation 0: $bytes bytes: 8192 in memory, $((bytes - 8192)) on storage in $dir/mem-0-0.dat"
run none alloc_mem
expect_log "MPI_Alloc_mem: rank 0: allocation: $bytes bytes in memory"
run none mapped "$dir"
echo "windows over the same memory saw the same bytes: shared, MPI_Alloc_mem and mapped memory; storage, combined, none"
