#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs dsm_failure_test with one rank SIGKILLed and checks what every
# survivor reported (see dsm_failure_test.cpp; the launch: sigkill_job.sh).
#
#   dsm_failure_test.sh <mpiexec> <dsm_failure_test> client|server|subscriber|subscriber-in-place|silent
mode=$3
. "$(dirname "$0")/sigkill_job.sh"
run_job dsm-failure 90 "$1" "$2" "$mode"
if [ "$mode" = client ]; then
    expect 0 "serve: ok"
    expect 1 "serve: ok"
    absent 2 "done after"
    expect 3 "read chunk A whose only modified copy died: broken"
    expect 3 "is broken: its only up-to-date copy was on rank 2 (client 0, node "
    expect 3 "allocate a new chunk in its place"
    expect 3 "read published chunk P: ok"
    if [ "${STRATA_DSM_TOPOLOGY:-direct}" = super-peer ]; then
        expect 3 "read chunk D whose writer sent it to its subscriber only: ok"  # relayed: the home has it
    else
        expect 3 "read chunk D whose writer sent it to its subscriber only: broken"
    fi
    expect 4 "D's release from its dead writer: ok"
    expect 3 "lock 7 the dead client held: broken"
    expect 3 "lock 7 is broken: its holder rank 2 (client 0, node "
    expect 3 "use another lock id"
    expect 3 "lock 8 then unlock: ok"
    expect 3 "done after"
    expect 4 "barrier with a dead client: peer_dead"
    expect 4 "rank 2 (client 0, node "
    expect 4 "done after"
elif [ "$mode" = subscriber ] || [ "$mode" = subscriber-in-place ]; then
    if [ "$mode" = subscriber-in-place ]; then
        expect 4 "holding D's release in place: ok"
        expect 2 "D's releases went to the subscriber by reference: ok"
    fi
    expect 0 "serve: ok"
    expect 1 "serve: ok"
    expect 2 "writes of D after its subscriber died: ok"
    expect 2 "D's direct grant recalled when its target died: ok"
    expect 3 "read D after the writes: ok"
    expect 3 "read D after its writer left after a failed barrier: broken"
    expect 3 "rank 2 (client 0, node "
    expect 3 "which left after a failed barrier"
    expect 2 "done after"
    expect 3 "done after"
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
done_within 10
finish
