#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs dsm_lock_test dead_holder (a lock holder SIGKILLed while others wait)
# and checks every survivor's report (the launch: sigkill_job.sh).
#
#   dsm_lock_test.sh <mpiexec> <dsm_lock_test>
. "$(dirname "$0")/sigkill_job.sh"
run_job dsm-lock 90 "$1" "$2" dead_holder
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
finish
