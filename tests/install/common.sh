# SPDX-License-Identifier: MIT
# Sourced by the install tests (tests/install.cmake): a fresh
# `cmake --install` of the build tree into a private prefix under /tmp, outside
# the source tree, removed on exit with everything else the test made.
#
#   source common.sh <build dir> <source dir>
#   sets: build, src, tmp (the test's directory), prefix; install_prefix installs there
set -euo pipefail

build=$(cd "$1" && pwd -P)
src=$(cd "$2" && pwd -P)
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
# `producer | has PATTERN`: grep that reads all its input (grep -q may exit
# early and, with pipefail, fail the producer with SIGPIPE).
has() {
  grep "$@" > /dev/null
}
# Runs a command, showing it; its output goes to the test log.
run() {
  echo "+ $*" >&2
  "$@"
}

tmp=$(mktemp -d /tmp/strata-install-test-XXXXXX)
cleanup() {
  # Mounts made by a test live in its own mount namespace and end with it; never
  # remove a tree that still has a mount point under it.
  if findmnt -rn -o TARGET | has "^$tmp"; then
    echo "install test: mounts left under $tmp; not removing it" >&2
    return
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

case "$tmp" in
  "$src"/*) fail "the temporary directory $tmp is inside the source tree $src" ;;
esac
# Nothing from the build or source tree may leak into what runs below.
unset LD_LIBRARY_PATH PYTHONPATH STRATA_BIN_DIR STRATA_BENCH_DIR STRATA_FSD CMAKE_PREFIX_PATH PKG_CONFIG_PATH

# install_prefix: cmake --install the build tree into $prefix.
prefix=$tmp/prefix
install_prefix() {
  if ! cmake --install "$build" --prefix "$prefix" > "$tmp/install.log" 2>&1; then
    cat "$tmp/install.log" >&2
    fail "cmake --install $build --prefix $prefix"
  fi
}
