#!/bin/sh
# SPDX-License-Identifier: MIT
# Mounts a 1 MiB tmpfs for the last rank's window; needs root.
# Usage: full_file_system_fails_with_no_space.sh MPIEXEC NP PROGRAM LIBRARY
set -eu
mpiexec=$1 np=$2 program=$3
missing() {
    if [ "${CI:-}" = true ]; then echo "missing capability (a failure in CI): $1"; exit 1; fi
    echo "skipped, missing capability: $1"; exit 77
}
[ "$(id -u)" -eq 0 ] || missing "root, to mount a tmpfs"
dir=$(mktemp -d /tmp/strata-mpi-nospace-XXXXXX)
cleanup() { umount "$dir/small" 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT
mkdir "$dir/small" "$dir/roomy"
mount -t tmpfs -o size=1m strata-mpi-nospace "$dir/small" || missing "mount -t tmpfs"
# the roomy directory keeps one unrelated file, which must survive
echo keep > "$dir/roomy/keep"
"$mpiexec" -n "$np" "$program" "$dir/small" "$dir/roomy"
