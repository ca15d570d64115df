#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The installed strata works with the source and build trees out of reach:
# in a private mount namespace an empty tmpfs covers the source tree (and with
# it build/), then the installed `strata` runs doctor, a workflow (its helper
# strata-workflow-task), an OCR program, the whole demo, lists the
# benchmark suites and runs `strata bench regions --out DIR` and
# `strata bench shm_handoff` (report in ./strata-bench-shm_handoff) at tiny sizes.
# The mounts end with the namespace. Needs root (unshare, mount).
# Usage: source_hidden.sh <build dir> <source dir>
source "$(dirname "$0")/common.sh"

if [[ "$(id -u)" != 0 ]] || ! unshare --mount true 2>/dev/null; then
  if [[ "${CI:-}" == true || "${CI:-}" == 1 ]]; then
    fail "needs root and mount namespaces (unshare --mount)"
  fi
  echo "skipped: needs root and mount namespaces"
  exit 77
fi
install_prefix
# The Python environment that renders the reports, reached through a bind
# mount made before the source tree (which may hold it) is covered.
venv=$(readlink -f "${STRATA_VENV:-$src/.venv}")
[[ -x "$venv/bin/python" ]] || fail "no Python environment at $venv (scripts/bootstrap)"
mkdir -p "$tmp/venv" "$tmp/work"

cat > "$tmp/inside.sh" <<'INSIDE'
set -euo pipefail
src=$1 build=$2 prefix=$3 tmp=$4 venv=$5
fail() { echo "FAIL: $*" >&2; exit 1; }
has() { grep "$@" > /dev/null; }
mount --bind "$venv" "$tmp/venv"
mount -t tmpfs -o size=1m,mode=0755 strata-hidden "$src"
[[ -z "$(ls -A "$src")" ]] || fail "the source tree is still visible"
[[ ! -e "$build" ]] || fail "the build tree is still visible"
cd "$tmp/work"
export STRATA_VENV=$tmp/venv
strata=$prefix/bin/strata
set -x
"$strata" --version | has "^strata [0-9]" || fail "strata --version"
"$strata" doctor > doctor.txt || { cat doctor.txt; fail "strata doctor exited non-zero"; }
cat doctor.txt
"$strata" doctor --json > doctor.json
"$tmp/venv/bin/python" - doctor.json <<'PY' || fail "strata doctor --json: a probe failed"
import json, sys
report = json.load(open(sys.argv[1]))
assert report["ok"], report
mpi = [c for c in report["capabilities"] if c["name"] == "mpi"]
assert mpi and mpi[0]["status"] == "ok", f"mpi probe (its helper strata-mpi-probe): {mpi}"
PY
"$strata" run --shape pipeline --tasks 2 --iterations 20 --data-size 64KiB --json > run.json ||
  fail "strata run (strata-workflow-task from libexec/strata)"
"$strata" run --shape simple --method mpi --iterations 5 --data-size 4KiB --json > run-mpi.json ||
  fail "strata run --method mpi"
"$strata" ocr "$prefix/libexec/strata/ocr_fibonacci" 15 | has "fib(15) = 610" || fail "strata ocr ocr_fibonacci"
"$strata" bench --list > suites.txt
for suite in regions shm_handoff shared-objects storage-windows umt external; do
  grep -q "^$suite " suites.txt || fail "strata bench --list does not list $suite: $(cat suites.txt)"
done
"$strata" bench regions --out "$tmp/regions-report" --size 256K --repeats 1 --disk-size 8M --dir /var/tmp ||
  fail "strata bench regions --out"
for f in results.json results.md regions.png; do
  [[ -s "$tmp/regions-report/$f" ]] || fail "strata bench regions --out: no $f"
done
grep -q '"strata bench regions --out' "$tmp/regions-report/results.json" || fail "the report does not record its command"
"$strata" bench shm_handoff --iterations 200 --repeats 1 --sizes 64 || fail "strata bench shm_handoff"
[[ -s strata-bench-shm_handoff/results.json ]] || fail "strata bench without --out: no ./strata-bench-shm_handoff/results.json"
"$strata" demo > demo.txt || { cat demo.txt; fail "strata demo"; }
cat demo.txt
INSIDE

# A private mount namespace: every mount below ends when it exits.
unshare --mount --propagation private bash "$tmp/inside.sh" "$src" "$build" "$prefix" "$tmp" "$venv" ||
  fail "the installed strata failed with the source tree hidden"
echo "source hidden: ok"
