#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs dsm_failure_test with one rank SIGKILLed and checks what every
# survivor reported (see dsm_failure_test.cpp).
#
#   dsm_failure_test.sh <mpiexec> <dsm_failure_test> client|server|silent
#
# Launch: each rank gets its own hydra proxy (-launcher fork, one "host" per
# rank), because MPICH 4.0's single proxy for all local ranks can itself fail
# when one of its ranks dies, and then takes the survivors down with it;
# -disable-auto-cleanup keeps mpiexec from killing the survivors. mpiexec's
# exit code reflects the killed rank, so it is not the verdict: every
# survivor's report is.
set -u
mpiexec=$1 program=$2 mode=$3
dir=$(mktemp -d /tmp/strata-dsm-failure.XXXXXX) || exit 1
trap 'rm -rf "$dir"' EXIT
start=$(date +%s)
timeout -k 5 90 "$mpiexec" -disable-auto-cleanup -launcher fork \
    -hosts 127.0.0.1,127.0.0.2,127.0.0.3,127.0.0.4,127.0.0.5 -ppn 1 -n 5 \
    "$program" "$mode" "$dir" >"$dir/out" 2>&1
rc=$?
elapsed=$(( $(date +%s) - start ))
fail=0
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    echo "FAIL: the job hung (killed by timeout after ${elapsed} s)"; fail=1
fi
expect() {  # expect <rank> <fixed text>
    if ! grep -qF -- "$2" "$dir/rank$1.txt" 2>/dev/null; then
        echo "FAIL: rank $1 did not report: $2"; fail=1
    fi
}
absent() {
    if grep -qF -- "$2" "$dir/rank$1.txt" 2>/dev/null; then
        echo "FAIL: rank $1 reported: $2 (it must not)"; fail=1
    fi
}
if [ "$mode" = client ]; then
    expect 0 "serve: ok"
    expect 1 "serve: ok"
    absent 2 "done after"
    expect 3 "read chunk A whose only modified copy died: broken"
    expect 3 "is broken: its only up-to-date copy was on rank 2 (client 0, node "
    expect 3 "allocate a new chunk in its place"
    expect 3 "read published chunk P: ok"
    expect 3 "lock 7 the dead client held: broken"
    expect 3 "lock 7 is broken: its holder rank 2 (client 0, node "
    expect 3 "use another lock id"
    expect 3 "lock 8 then unlock: ok"
    expect 3 "done after"
    expect 4 "barrier with a dead client: peer_dead"
    expect 4 "rank 2 (client 0, node "
    expect 4 "done after"
elif [ "$mode" = silent ]; then
    expect 4 "stopping"
    expect 2 "barrier with a silent client: peer_dead"
    expect 2 "rank 4 (client 2, node "
    expect 2 "done after"
    expect 3 "late barrier with a silent client: peer_dead"
    expect 3 "rank 4 (client 2, node "
    expect 3 "done after"
    absent 3 "rank 2 (client 0"
else
    expect 0 "serve: ok"
    absent 1 "serve: ok"
    expect 3 "read chunk B whose home died: peer_dead"
    expect 3 "rank 1 (node "
    if [ "${STRATA_DSM_TOPOLOGY:-direct}" = super-peer ]; then
        # Rank 1 was client 1's super-peer too: it has no route left (docs/dsm.md, "Failure").
        expect 3 "read chunk A on the live server: peer_dead"
    else
        expect 3 "read chunk A on the live server: ok"
    fi
    for r in 2 3 4; do
        expect $r "barrier of the clients after a server died: ok"
        expect $r "done after"
    done
fi
# Every survivor's "done after <s> s" is bounded by the 2 s timeout plus detection.
for f in "$dir"/rank*.txt; do
    secs=$(sed -n 's/.*done after \([0-9]*\)\..*/\1/p' "$f")
    if [ -n "$secs" ] && [ "$secs" -gt 10 ]; then
        echo "FAIL: $(basename "$f"): took $secs s (bound 10 s)"; fail=1
    fi
done
echo "--- reports (mpiexec exit $rc after ${elapsed} s) ---"
cat "$dir"/rank*.txt
[ "$fail" -eq 0 ] || { echo "--- mpiexec output ---"; cat "$dir/out"; }
exit "$fail"
