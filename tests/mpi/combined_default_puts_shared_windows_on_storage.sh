#!/bin/sh
# SPDX-License-Identifier: MIT
# A combined default (storage_alloc_factor < 1 or auto in STRATA_MPI_WINDOW_HINTS)
# does not abort an unmodified program's MPI_Win_allocate_shared: the whole
# shared window goes to storage (a program asks for a combined shared window in
# its MPI_Info), and the library says so once. Other routines still get the
# combined placement (MPI_Alloc_mem + MPI_Win_create, MPI_Win_allocate).
# Usage: combined_default_puts_shared_windows_on_storage.sh MPIEXEC NP PROGRAM LIBRARY
set -eu
mpiexec=$1 np=$2 program=$3 library=$4
dir=$(mktemp -d /tmp/strata-mpi-combined-XXXXXX)
trap 'rm -rf "$dir"' EXIT
die() { echo "FAILED: $*"; cat "$dir/out"; ls -l "$dir"; exit 1; }
bytes=$((20000 * 8))

for factor in 0.5 auto; do
    rm -f "$dir"/*.dat
    STRATA_MPI_WINDOW_HINTS="alloc_type=storage,storage_alloc_filename=$dir/%k-%r-%w.dat,storage_alloc_factor=$factor" \
        "$mpiexec" -n "$np" -genv LD_PRELOAD "$library" "$program" shared > "$dir/out" 2>&1 ||
        die "factor $factor: MPI_Win_allocate_shared failed"
    "$program" check-shared "$dir/shm-0-0.dat" "$np" > /dev/null || die "factor $factor: shm-0-0.dat"
    n=$(grep -c "STRATA_MPI_WINDOW_HINTS storage_alloc_factor=$factor does not apply to shared windows" "$dir/out" || true)
    [ "$n" -eq 1 ] || die "factor $factor: the placement was said $n times, expected once"
    r=0
    while [ $r -lt "$np" ]; do
        grep -qx "rank $r: window 0: $dir/shm-0-0.dat" "$dir/out" || die "rank $r does not report the shared file"
        r=$((r + 1))
    done
done

# The same default on the other routines: combined, half of each window in memory.
rm -f "$dir"/*.dat
STRATA_LOG=info STRATA_MPI_WINDOW_HINTS="alloc_type=storage,storage_alloc_filename=$dir/%k-%r-%w.dat,storage_alloc_factor=0.5" \
    "$mpiexec" -n "$np" -genv LD_PRELOAD "$library" "$program" run > "$dir/out" 2>&1 || die "combined run failed"
grep -q "MPI_Win_create: rank 0: window over allocation 0: $bytes bytes: 77824 in memory, 82176 on storage in $dir/mem-0-0.dat" "$dir/out" ||
    die "the MPI_Win_create window is not combined"
grep -q "MPI_Win_allocate: rank 0: window 2: $bytes bytes: 77824 in memory, 82176 on storage in $dir/win-0-2.dat" "$dir/out" ||
    die "the MPI_Win_allocate window is not combined"
echo "combined defaults: shared windows on storage, said once; other windows combined"
