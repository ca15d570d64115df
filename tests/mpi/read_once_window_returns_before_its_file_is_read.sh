#!/bin/sh
# SPDX-License-Identifier: MIT
# Mounts strata_test_eio_fs holding every read while $dir/hold exists, and
# runs the program on a file in it; needs root (FUSE mount) and a userfaultfd
# for kernel faults (Linux 6.7+), without which MPI_Win_allocate would wait
# for the held device.
# Usage: read_once_window_returns_before_its_file_is_read.sh MPIEXEC NP PROGRAM EIO_FS
set -eu
mpiexec=$1 np=$2 program=$3
. "$(dirname "$0")/eio_fs_mount.sh"
release=$(uname -r)
major=${release%%.*} rest=${release#*.}
minor=${rest%%.*}
[ "$major" -gt 6 ] || { [ "$major" -eq 6 ] && [ "$minor" -ge 7 ]; } ||
    missing "a userfaultfd that handles kernel faults (Linux 6.7+), for reading behind the program"
# The hold file exists before the daemon starts: no read is ever answered early.
hold_dir=$(mktemp -d /tmp/strata-mpi-hold-XXXXXX)
: > "$hold_dir/hold"
mount_eio_fs "$4" held STRATA_TEST_HOLD_WHILE="$hold_dir/hold"
trap 'eio_fs_cleanup; rm -rf "$hold_dir"' EXIT
# A hang guard inside ctest's timeout: after 60 s the device is released, so a
# MPI_Win_allocate that waits for its file returns, and the program says so.
# Its sleep ends with it: a sleep left running would hold ctest's output open for a minute.
(
    sleep 60 &
    pause=$!
    trap 'kill "$pause" 2>/dev/null; exit 0' TERM
    wait "$pause"
    rm -f "$hold_dir/hold"
) &
watchdog=$!
status=0
"$mpiexec" -n "$np" "$program" "$dir/fs/window.dat" "$hold_dir/hold" || status=$?
kill "$watchdog" 2>/dev/null || true
wait "$watchdog" 2>/dev/null || true
exit "$status"
