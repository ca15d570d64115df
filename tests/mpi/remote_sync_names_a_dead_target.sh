#!/bin/sh
# SPDX-License-Identifier: MIT
# Rank 1 dies with rank 0's put not yet synced. Rank 0 must not hang: its
# MPI_Win_sync returns MPIX_ERR_PROC_FAILED naming rank 1 and its file, or
# MPI ends the job first. MPICH 4.0.2 (ch4:ucx) ends it as soon as any thread
# of a survivor polls the dead process's connection (rank 0's sync agent
# polls all the time), even with MPIR_CVAR_ENABLE_FT=1, so either can happen;
# what may not is a hang (the test's timeout), a successful sync, or an
# error that does not name the rank and the file.
# Usage: remote_sync_names_a_dead_target.sh MPIEXEC NP PROGRAM LIBRARY
set -u
mpiexec=$1 program=$3
dir=$(mktemp -d /var/tmp/strata-mpi-remote-dead-XXXXXX)
trap 'rm -rf "$dir"' EXIT
out=$("$mpiexec" -disable-auto-cleanup -n 2 "$program" dead "$dir" 2>&1)
status=$?
echo "$out"
if echo "$out" | grep -q '^returned: '; then
    echo "$out" | grep -q '^named: ' || { echo "rank 0's MPI_Win_sync did not fail naming rank 1 and its file"; exit 1; }
    echo "the dead target was named"
    exit 0
fi
[ "$status" -ne 0 ] || { echo "rank 0 neither returned from MPI_Win_sync nor was its job ended"; exit 1; }
echo "MPI ended the job when rank 1 died (MPICH's default); rank 0 did not hang"
