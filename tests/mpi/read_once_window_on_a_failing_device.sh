#!/bin/sh
# SPDX-License-Identifier: MIT
# Mounts strata_test_eio_fs (reads fail with EIO from 4 MiB on) and runs the
# program on a file in it; needs root for the FUSE mount.
# Usage: read_once_window_on_a_failing_device.sh MPIEXEC NP PROGRAM EIO_FS
set -eu
mpiexec=$1 np=$2 program=$3 eio_fs=$4
missing() {
    if [ "${CI:-}" = true ]; then echo "missing capability (a failure in CI): $1"; exit 1; fi
    echo "skipped, missing capability: $1"; exit 77
}
[ "$(id -u)" -eq 0 ] || missing "root, to mount a FUSE file system"
dir=$(mktemp -d /tmp/strata-mpi-eio-XXXXXX)
daemon=
cleanup() {
    umount "$dir/eio" 2>/dev/null || umount -l "$dir/eio" 2>/dev/null || true
    if [ -n "$daemon" ]; then kill "$daemon" 2>/dev/null || true; wait "$daemon" 2>/dev/null || true; fi
    rm -rf "$dir"
}
trap cleanup EXIT
mkdir "$dir/eio"
STRATA_TEST_EIO_AFTER=4194304 "$eio_fs" "$dir/eio" &
daemon=$!
tries=0
until mountpoint -q "$dir/eio"; do
    tries=$((tries + 1))
    [ "$tries" -lt 200 ] || { echo "strata_test_eio_fs did not mount $dir/eio"; exit 1; }
    sleep 0.05
done
"$mpiexec" -n "$np" "$program" "$dir/eio/window.dat"
