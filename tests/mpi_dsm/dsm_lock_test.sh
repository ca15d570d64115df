#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs dsm_lock_test dead_holder (a lock holder SIGKILLed while others wait)
# and checks every survivor's report. The launch is dsm_failure_test.sh's:
# one hydra proxy per rank, -disable-auto-cleanup; mpiexec's exit code
# reflects the killed rank, so the reports are the verdict.
#
#   dsm_lock_test.sh <mpiexec> <dsm_lock_test>
set -u
mpiexec=$1 program=$2
dir=$(mktemp -d /tmp/strata-dsm-lock.XXXXXX) || exit 1
trap 'rm -rf "$dir"' EXIT
# A generous hang bound, not a timing: the survivors' errors come after the 2 s timeout.
timeout -k 5 90 "$mpiexec" -disable-auto-cleanup -launcher fork \
    -hosts 127.0.0.1,127.0.0.2,127.0.0.3,127.0.0.4,127.0.0.5 -ppn 1 -n 5 \
    "$program" dead_holder "$dir" >"$dir/out" 2>&1
rc=$?
fail=0
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    echo "FAIL: the job hung (killed by the 90 s bound)"; fail=1
fi
expect() {  # expect <rank> <fixed text>
    if ! grep -qF -- "$2" "$dir/rank$1.txt" 2>/dev/null; then
        echo "FAIL: rank $1 did not report: $2"; fail=1
    fi
}
expect 0 "ok: rank 0: serve: ok"
for r in 2 3; do
    expect $r "ok: rank $r: lock 7 waited for while its holder died"
done
expect 4 "ok: rank 4: lock 7 asked for after its holder died"
for r in 2 3 4; do
    expect $r "ok: rank $r: unlock of the broken lock 7"
    expect $r "ok: rank $r: lock 8: ok"
    expect $r "ok: rank $r: unlock 8: ok"
done
for r in 0 2 3 4; do
    expect $r "done rank $r"
done
if grep -q "FAIL:" "$dir"/rank*.txt; then
    echo "FAIL: a survivor reported a failure"; fail=1
fi
if grep -q "done rank 1" "$dir/rank1.txt" 2>/dev/null; then
    echo "FAIL: rank 1 finished (it should have died holding lock 7)"; fail=1
fi
echo "--- reports (mpiexec exit $rc) ---"
cat "$dir"/rank*.txt
[ "$fail" -eq 0 ] || { echo "--- mpiexec output ---"; cat "$dir/out"; }
exit "$fail"
