#!/bin/sh
# SPDX-License-Identifier: MIT
# Mounts strata_test_eio_fs (reads fail with EIO from 4 MiB on) and runs the
# program on a file in it; needs root for the FUSE mount.
# Usage: read_once_window_on_a_failing_device.sh MPIEXEC NP PROGRAM EIO_FS
set -eu
mpiexec=$1 np=$2 program=$3
. "$(dirname "$0")/eio_fs_mount.sh"
mount_eio_fs "$4" eio STRATA_TEST_EIO_AFTER=4194304
"$mpiexec" -n "$np" "$program" "$dir/fs/window.dat"
