#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Python package installs like any other (pyproject.toml): into a clean
# virtual environment (no system site packages, nothing of .venv),
# `pip install <source>` builds it as a user's pip does (build isolation: the
# build tools and numpy come from PyPI) and `import strata` then works from
# another directory with no PYTHONPATH: a segment, a zero-copy numpy vector,
# a handle through pickle. `pip wheel --no-build-isolation` (the build tools
# installed in the venv) makes a wheel holding the extension, its type stubs
# and libstrata. Needs PyPI.
# Usage: pip.sh <build dir> <source dir>
source "$(dirname "$0")/common.sh"

/usr/bin/python3 -m venv "$tmp/venv"
py=$tmp/venv/bin/python
pip=("$py" -m pip --disable-pip-version-check)
[[ "$("$py" -c 'import sys; print(sys.prefix != sys.base_prefix)')" == True ]] || fail "not a virtual environment"
! "$py" -c "import strata" 2> /dev/null || fail "strata is importable before it is installed"

run "${pip[@]}" install -q "$src" > "$tmp/install-py.log" 2>&1 ||
  { tail -50 "$tmp/install-py.log"; fail "pip install $src"; }

mkdir -p "$tmp/elsewhere"
cd "$tmp/elsewhere"
run env -u PYTHONPATH "$py" - "$tmp/venv" <<'PY' || fail "import strata in the clean environment"
import os
import pickle
import sys

import numpy as np

import strata

venv = os.path.realpath(sys.argv[1])
where = os.path.realpath(strata.__file__)
assert where.startswith(venv + os.sep), f"strata imported from {where}, not from {venv}"
name = f"strata-pip-test-{os.getpid()}"
with strata.Segment(name, "create_only", 16 << 20) as seg:
    a = seg.vector("v", np.float64, 1000)
    a[:] = np.arange(1000)
    handle = pickle.loads(pickle.dumps(seg.save(a)))
    with strata.Segment(name, "open_only") as other:
        b = other.load(handle)
        assert b.sum() == 999 * 1000 / 2, b.sum()
        del b
    del a
print(f"import strata from {where}: ok")
PY

run "${pip[@]}" install -q scikit-build-core nanobind || fail "pip install the build tools from PyPI"
run "${pip[@]}" wheel -q --no-build-isolation --no-deps -w "$tmp/wheels" "$src" > "$tmp/wheel.log" 2>&1 ||
  { tail -50 "$tmp/wheel.log"; fail "pip wheel $src"; }
wheels=("$tmp"/wheels/strata-*.whl)
[[ -f "${wheels[0]}" ]] || fail "pip wheel made no strata-*.whl"
contents=$("$py" -m zipfile -l "${wheels[0]}")
for member in strata/__init__.py strata/_strata strata/libstrata.so.0 strata/_strata.pyi strata/py.typed; do
  has "$member" <<< "$contents" || fail "the wheel has no $member: $contents"
done
echo "pip: ok"
