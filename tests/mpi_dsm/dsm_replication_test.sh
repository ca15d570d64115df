#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs dsm_replication_test with server rank 1 SIGKILLed and checks what every
# survivor reported (see dsm_replication_test.cpp; the launch: sigkill_job.sh).
#
#   dsm_replication_test.sh <mpiexec> <dsm_replication_test> states|racing|off
mode=$3
. "$(dirname "$0")/sigkill_job.sh"
run_job dsm-replication 100 "$1" "$2" "$mode"
expect 0 "serve: ok"
absent 1 "serve:"
case "$mode" in
states)
    for c in "W (written back)" "M (modified at client 0)" "S (shared)" "F (first touch)" "Z (never written)"; do
        expect 3 "read $c after its home died: ok"
    done
    expect 3 "read X on the live server: ok"
    expect 3 "write S: ok"
    expect 4 "read S written after the death: ok"
    expect 2 "publish P: ok"
    expect 4 "notification of P after the death: ok"
    expect 2 "unlock lock 1 held across the death: ok"
    expect 3 "lock 1 after its holder unlocked: ok"
    expect 2 "allocate a chunk homed at the dead server: ok"
    expect 4 "read the new chunk: ok"
    expect 3 "free W: ok"
    expect 3 "read W after free is not_found: ok"
    ;;
racing)
    for r in 2 3 4; do
        expect $r "400+ increments racing the death of the counters' home, 50+ after it: ok"
    done
    expect 2 "the increments spanned the fail-over: ok"
    expect 2 "increments made: ok"
    ;;
off)
    expect 3 "read W (written back) after its home died: peer_dead"
    expect 3 "rank 1 (node "
    ;;
esac
for r in 2 3 4; do
    expect $r "leave: ok"
    expect $r "done after"
done
done_within 30
finish
