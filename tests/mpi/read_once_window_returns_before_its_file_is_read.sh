#!/bin/sh
# SPDX-License-Identifier: MIT
# Mounts strata_test_eio_fs holding every read while $dir/hold exists, and
# runs the program on a file in it; needs root (FUSE mount) and a userfaultfd
# for kernel faults (Linux 6.7+), without which MPI_Win_allocate would wait
# for the held device.
# Usage: read_once_window_returns_before_its_file_is_read.sh MPIEXEC NP PROGRAM EIO_FS
set -eu
mpiexec=$1 np=$2 program=$3 eio_fs=$4
missing() {
    if [ "${CI:-}" = true ]; then echo "missing capability (a failure in CI): $1"; exit 1; fi
    echo "skipped, missing capability: $1"; exit 77
}
[ "$(id -u)" -eq 0 ] || missing "root, to mount a FUSE file system"
release=$(uname -r)
major=${release%%.*} rest=${release#*.}
minor=${rest%%.*}
[ "$major" -gt 6 ] || { [ "$major" -eq 6 ] && [ "$minor" -ge 7 ]; } ||
    missing "a userfaultfd that handles kernel faults (Linux 6.7+), for reading behind the program"
dir=$(mktemp -d /tmp/strata-mpi-held-XXXXXX)
daemon=
cleanup() {
    umount "$dir/fs" 2>/dev/null || umount -l "$dir/fs" 2>/dev/null || true
    if [ -n "$daemon" ]; then kill "$daemon" 2>/dev/null || true; wait "$daemon" 2>/dev/null || true; fi
    rm -rf "$dir"
}
trap cleanup EXIT
mkdir "$dir/fs"
: > "$dir/hold"
STRATA_TEST_HOLD_WHILE="$dir/hold" "$eio_fs" "$dir/fs" &
daemon=$!
tries=0
until mountpoint -q "$dir/fs"; do
    tries=$((tries + 1))
    [ "$tries" -lt 200 ] || { echo "strata_test_eio_fs did not mount $dir/fs"; exit 1; }
    sleep 0.05
done
# A hang guard inside ctest's timeout: after 60 s the device is released, so a
# MPI_Win_allocate that waits for its file returns, and the program says so.
( sleep 60; rm -f "$dir/hold" ) &
watchdog=$!
status=0
"$mpiexec" -n "$np" "$program" "$dir/fs/window.dat" "$dir/hold" || status=$?
kill "$watchdog" 2>/dev/null || true
wait "$watchdog" 2>/dev/null || true
exit "$status"
