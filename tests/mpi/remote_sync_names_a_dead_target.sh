#!/bin/sh
# SPDX-License-Identifier: MIT
# Rank 1 dies with rank 0's put not yet synced: rank 0's MPI_Win_sync returns
# MPIX_ERR_PROC_FAILED naming rank 1 and its file, and does not hang.
# Usage: remote_sync_names_a_dead_target.sh MPIEXEC NP PROGRAM LIBRARY
set -u
mpiexec=$1 program=$3
dir=$(mktemp -d /var/tmp/strata-mpi-remote-dead-XXXXXX)
trap 'rm -rf "$dir"' EXIT
out=$("$mpiexec" -disable-auto-cleanup -n 2 "$program" dead "$dir" 2>&1)
echo "$out"
echo "$out" | grep -q '^named: ' || { echo "rank 0's MPI_Win_sync did not name the dead rank and its file"; exit 1; }
