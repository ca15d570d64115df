# SPDX-License-Identifier: MIT
# Sourced by the drivers that run a program on strata_test_eio_fs
# (tests/support/eio_fs.cpp): `missing` reports a missing capability (a
# failure with CI=true, else a skip), and `mount_eio_fs EIO_FS NAME [VAR=value...]`
# mounts the file system at $dir/fs in a new private directory $dir
# (/tmp/strata-mpi-NAME-XXXXXX), with the given environment for the daemon,
# and removes mount, daemon and directory when the shell exits.
missing() {
    if [ "${CI:-}" = true ]; then echo "missing capability (a failure in CI): $1"; exit 1; fi
    echo "skipped, missing capability: $1"; exit 77
}
mount_eio_fs() {
    eio_fs=$1 name=$2
    shift 2
    [ "$(id -u)" -eq 0 ] || missing "root, to mount a FUSE file system"
    dir=$(mktemp -d "/tmp/strata-mpi-$name-XXXXXX")
    daemon=
    trap eio_fs_cleanup EXIT
    mkdir "$dir/fs"
    env "$@" "$eio_fs" "$dir/fs" &
    daemon=$!
    tries=0
    until mountpoint -q "$dir/fs"; do
        tries=$((tries + 1))
        [ "$tries" -lt 200 ] || { echo "strata_test_eio_fs did not mount $dir/fs"; exit 1; }
        sleep 0.05
    done
}
eio_fs_cleanup() {
    umount "$dir/fs" 2>/dev/null || umount -l "$dir/fs" 2>/dev/null || true
    if [ -n "$daemon" ]; then kill "$daemon" 2>/dev/null || true; wait "$daemon" 2>/dev/null || true; fi
    rm -rf "$dir"
}
