#!/bin/sh
# SPDX-License-Identifier: MIT
# Two jobs on the same files: the second finds what the first wrote.
# Usage: storage_window_data_survives_a_restart.sh MPIEXEC NP PROGRAM LIBRARY
set -eu
mpiexec=$1 np=$2 program=$3
dir=$(mktemp -d /tmp/strata-mpi-restart-XXXXXX)
trap 'rm -rf "$dir"' EXIT
"$mpiexec" -n "$np" "$program" write "$dir"
[ "$(ls "$dir" | wc -l)" -eq "$np" ] || { echo "expected $np files after the first run:"; ls -l "$dir"; exit 1; }
"$mpiexec" -n "$np" "$program" verify "$dir"
[ -z "$(ls "$dir")" ] || { echo "files left after the second run:"; ls -l "$dir"; exit 1; }
echo "restart: data of $np ranks survived"
