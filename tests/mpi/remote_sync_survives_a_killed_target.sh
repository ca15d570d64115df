#!/bin/sh
# SPDX-License-Identifier: MIT
# Rank 0 puts into rank 1's storage window and calls MPI_Win_sync while rank 1
# computes; rank 1 is SIGKILLed right after. The put must be in rank 1's file.
# Usage: remote_sync_survives_a_killed_target.sh MPIEXEC NP PROGRAM LIBRARY
set -u
mpiexec=$1 program=$3
# Not a tmpfs: direct write-back needs O_DIRECT.
dir=$(mktemp -d /var/tmp/strata-mpi-remote-sync-XXXXXX)
trap 'rm -rf "$dir"' EXIT
out=$("$mpiexec" -n 2 "$program" kill "$dir" 2>&1)
echo "$out" | grep -q '^synced$' || { echo "rank 0's MPI_Win_sync did not return:"; echo "$out"; exit 1; }
"$program" check "$dir"
