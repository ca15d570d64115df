#!/bin/sh
# SPDX-License-Identifier: MIT
# examples/mpi/storage_window.c, run twice on the same directory: the second
# run continues from the counters the first one left in the file.
# Usage: storage_window_example_runs_twice.sh MPIEXEC NP PROGRAM LIBRARY
set -eu
mpiexec=$1 np=$2 program=$3
dir=$(mktemp -d /tmp/strata-mpi-example-XXXXXX)
trap 'rm -rf "$dir"' EXIT
step=$((np * (np - 1) / 2))
"$mpiexec" -n "$np" "$program" "$dir" | tee "$dir/out"
grep -q "counters went from 0 to $step and are stored in $dir/counters-0.dat" "$dir/out"
"$mpiexec" -n "$np" "$program" "$dir" | tee "$dir/out"
grep -q "counters went from $step to $((2 * step))" "$dir/out"
