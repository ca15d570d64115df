#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs one storage-windows application at a tiny size in a fresh directory
# (passed as --dir) and removes the directory on every exit path.
# Usage: smoke.sh MPIEXEC NP PROGRAM ARGS...
set -eu
mpiexec=$1 np=$2 program=$3
shift 3
dir=$(mktemp -d /var/tmp/strata-sw-smoke-XXXXXX)
trap 'rm -rf "$dir"' EXIT
trap 'exit 1' INT TERM
"$mpiexec" -n "$np" "$program" --dir "$dir" "$@"
leftover=$(find "$dir" -type f | head -5)
[ -z "$leftover" ] || { echo "files left behind: $leftover"; exit 1; }
