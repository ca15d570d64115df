#!/bin/sh
# SPDX-License-Identifier: MIT
# An MPI binary built without strata gets storage windows from the
# environment when libstrata-mpi is preloaded, and memory windows without it.
# Usage: unmodified_program_uses_storage_under_ld_preload.sh MPIEXEC NP PROGRAM LIBRARY
set -eu
mpiexec=$1 np=$2 program=$3 library=$4
dir=$(mktemp -d /tmp/strata-mpi-preload-XXXXXX)
trap 'rm -rf "$dir"' EXIT
if ldd "$program" | grep -q strata; then echo "$program must not link strata"; exit 1; fi

STRATA_MPI_WINDOW_HINTS="alloc_type=storage, storage_alloc_filename=$dir/win-%r-%w.dat" \
    "$mpiexec" -n "$np" -genv LD_PRELOAD "$library" "$program" run
"$program" check "$dir" "$np"
[ "$(ls "$dir" | wc -l)" -eq $((np + 1)) ] || { echo "unexpected files:"; ls -l "$dir"; exit 1; }

# %j: the job id from STRATA_JOB_ID, else the same on every rank (rank 0's pid).
rm -f "$dir"/*
STRATA_JOB_ID=job42 STRATA_MPI_WINDOW_HINTS="alloc_type=storage,storage_alloc_filename=$dir/%j-win-%r-%w.dat" \
    "$mpiexec" -n "$np" -genv LD_PRELOAD "$library" "$program" run
"$program" check "$dir" "$np" job42-
rm -f "$dir"/*
(unset SLURM_JOB_ID PBS_JOBID LSB_JOBID FLUX_JOB_ID COBALT_JOBID JOB_ID STRATA_JOB_ID
 STRATA_MPI_WINDOW_HINTS="alloc_type=storage,storage_alloc_filename=$dir/%j-win-%r-%w.dat" \
    "$mpiexec" -n "$np" -genv LD_PRELOAD "$library" "$program" run)
jobs=$(ls "$dir" | sed 's/-win-.*//' | sort -u)
[ "$(echo "$jobs" | wc -l)" -eq 1 ] && [ "$jobs" -gt 0 ] 2>/dev/null || { echo "%j differs between ranks:"; ls "$dir"; exit 1; }
"$program" check "$dir" "$np" "$jobs-"

# Without the preload the same environment changes nothing.
rm -f "$dir"/*
STRATA_MPI_WINDOW_HINTS="alloc_type=storage,storage_alloc_filename=$dir/win-%r-%w.dat" \
    "$mpiexec" -n "$np" "$program" run
[ -z "$(ls "$dir")" ] || { echo "files without the preload:"; ls -l "$dir"; exit 1; }

# Malformed defaults fail the first window on every rank, saying why.
if STRATA_MPI_WINDOW_HINTS="alloc_type" "$mpiexec" -n "$np" -genv LD_PRELOAD "$library" "$program" run \
        > "$dir/out" 2>&1; then
    echo "malformed STRATA_MPI_WINDOW_HINTS was accepted"; exit 1
fi
grep -q "STRATA_MPI_WINDOW_HINTS=alloc_type: expected key=value" "$dir/out" ||
    { echo "no explanation of the malformed hints:"; cat "$dir/out"; exit 1; }
echo "LD_PRELOAD: storage windows for an unmodified program"
