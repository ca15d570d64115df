#!/bin/sh
# SPDX-License-Identifier: MIT
# An unmodified RMA program (MPI_Alloc_mem(MPI_INFO_NULL) + MPI_Win_create,
# then MPI_Win_allocate) under LD_PRELOAD and STRATA_MPI_WINDOW_HINTS: the
# defaults apply to MPI_Alloc_mem too, so the MPI_Win_create window is a
# storage window; %k and %w tell the allocations apart;
# STRATA_MPI_WINDOW_HINTS_SCOPE limits the routines; STRATA_LOG=info says per
# window where its bytes went.
# Usage: unmodified_rma_program_gets_storage_from_alloc_mem.sh MPIEXEC NP PROGRAM LIBRARY
set -eu
mpiexec=$1 np=$2 program=$3 library=$4
dir=$(mktemp -d /tmp/strata-mpi-allocmem-XXXXXX)
trap 'rm -rf "$dir"' EXIT
if ldd "$program" | grep -q strata; then echo "$program must not link strata"; exit 1; fi
die() { echo "FAILED: $*"; [ -f "$dir/out" ] && cat "$dir/out"; ls -l "$dir"; exit 1; }
run() { # run SCOPE: the program under the preload with the defaults, log at info
    rm -f "$dir"/*.dat
    env ${1:+STRATA_MPI_WINDOW_HINTS_SCOPE=$1} STRATA_LOG=info \
        STRATA_MPI_WINDOW_HINTS="alloc_type=storage,storage_alloc_filename=$dir/%k-%r-%w.dat" \
        "$mpiexec" -n "$np" -genv LD_PRELOAD "$library" "$program" run > "$dir/out" 2>&1 || die "run (scope '$1')"
}
files() { ls "$dir" | grep '\.dat$' | sort | tr '\n' ' '; }
expect_files() { # expect_files PATTERN...: exactly these files, %r replaced by each rank
    want=$(for p in "$@"; do r=0; while [ $r -lt "$np" ]; do echo "$p" | sed "s/%r/$r/"; r=$((r + 1)); done; done |
        sort | tr '\n' ' ')
    [ "$(files)" = "$want" ] || die "files: '$(files)', expected '$want'"
}
bytes=$((20000 * 8))

# 1. Default scope (all routines): the MPI_Alloc_mem window, the scratch buffer
#    and the MPI_Win_allocate window are three files, told apart by %k and %w.
run ""
expect_files mem-%r-0.dat mem-%r-1.dat win-%r-2.dat
r=0
while [ $r -lt "$np" ]; do
    "$program" check "$dir/mem-$r-0.dat" $r "$np" > /dev/null || die "mem-$r-0.dat"
    "$program" check "$dir/win-$r-2.dat" $r "$np" > /dev/null || die "win-$r-2.dat"
    grep -qx "rank $r: window 0: $dir/mem-$r-0.dat" "$dir/out" || die "window 0 of rank $r does not report its file"
    grep -qx "rank $r: window 1: $dir/win-$r-2.dat" "$dir/out" || die "window 1 of rank $r does not report its file"
    # STRATA_LOG=info: one line per window and allocation saying where its bytes went.
    grep -qF "MPI_Alloc_mem: rank $r: allocation 0: $bytes bytes: 0 in memory, $bytes on storage in $dir/mem-$r-0.dat (hints from STRATA_MPI_WINDOW_HINTS)" "$dir/out" ||
        die "no placement line for allocation 0 of rank $r"
    grep -qF "MPI_Win_create: rank $r: window over allocation 0: $bytes bytes: 0 in memory, $bytes on storage in $dir/mem-$r-0.dat" "$dir/out" ||
        die "no placement line for the MPI_Win_create window of rank $r"
    grep -qF "MPI_Win_allocate: rank $r: window 2: $bytes bytes: 0 in memory, $bytes on storage in $dir/win-$r-2.dat" "$dir/out" ||
        die "no placement line for the MPI_Win_allocate window of rank $r"
    r=$((r + 1))
done

# 2. alloc_mem>=1K: the 64-byte scratch buffer stays in memory (and takes no index).
run "win_allocate,alloc_mem>=1K"
expect_files mem-%r-0.dat win-%r-1.dat
grep -qF "MPI_Alloc_mem: rank 0: allocation: 64 bytes in memory" "$dir/out" || die "the scratch buffer's placement is not reported"

# 3. Only MPI_Win_allocate: the MPI_Win_create window stays in memory, and says so.
run "win_allocate"
expect_files win-%r-0.dat
grep -qx "rank 0: window 0: memory" "$dir/out" || die "window 0 reports storage"
grep -qF "MPI_Win_create: rank 0: window: $bytes bytes in memory (the program's own memory, not a storage MPI_Alloc_mem allocation)" "$dir/out" ||
    die "the memory window's placement is not reported"
"$program" check "$dir/win-0-0.dat" 0 "$np" > /dev/null || die "win-0-0.dat"

# 4. A wrong scope entry is an error naming the variable, the entry and the known ones.
rm -f "$dir"/*.dat
if STRATA_MPI_WINDOW_HINTS_SCOPE="win_allocate,alloc_men" \
    STRATA_MPI_WINDOW_HINTS="alloc_type=storage,storage_alloc_filename=$dir/%k-%r-%w.dat" \
    "$mpiexec" -n "$np" -genv LD_PRELOAD "$library" "$program" run > "$dir/out" 2>&1; then
    die "a wrong scope entry was accepted"
fi
grep -qF "STRATA_MPI_WINDOW_HINTS_SCOPE=win_allocate,alloc_men: unknown entry 'alloc_men' (expected a comma list of win_allocate, win_allocate_shared, alloc_mem" "$dir/out" ||
    die "the wrong scope entry is not explained"
[ -z "$(files)" ] || die "files left behind by a rejected scope"
echo "MPI_Alloc_mem + MPI_Win_create: storage windows for an unmodified RMA program"
