#!/bin/bash
# SPDX-License-Identifier: MIT
# Runs one job on emulated nodes and injects one fault into one node mid-run
# (tests/python/test_faults_across_nodes.py; runs as apps/video/emulate's COMMAND).
#
#   node_fault_driver.sh <fault> <node> <ready> <ended> <job...>
#
# fault: kill | cut | degrade (1 Mbit/s for 4 s, then restored); ready: a shell
# condition true once the job is mid-transfer; ended: a shell condition true
# once every rank the driver waits for has reported. Prints, for the test:
#   run pids: <every pid in the nodes' cgroups just before the fault>
#   fault at <CLOCK_REALTIME s> / restored at <s> (degrade: "running at restore")
#   ranks ended at <s> | job ended at <s> before every rank reported | ranks still running after <bound> s
#   launcher still running after the ranks ended (then ended by this driver)
#   left on <node>: <pids>   (processes of the run still in a node's cgroup)
#   job exit <code>
set -u
fault=$1 node=$2 ready=$3 ended=$4
shift 4
bound=60  # the hang bound: far above the 10 s the issue asks, so that load cannot fail it

"$@" &
job=$!
for _ in $(seq 1 1200); do
    eval "$ready" && break
    kill -0 "$job" 2>/dev/null || break
    sleep 0.05
done
if ! eval "$ready"; then
    echo "never ready"
    kill "$job" 2>/dev/null
    wait "$job"
    echo "job exit $?"
    exit 0
fi
# Every process of the run, for the record.
echo "run pids: $(for n in $STRATA_EMU_NODES; do "$STRATA_EMU_FAULT" procs "$n"; done | tr '\n' ' ')"
echo "fault at $(date +%s.%N)"
case "$fault" in
    kill | cut) "$STRATA_EMU_FAULT" "$fault" "$node" ;;
    degrade)
        "$STRATA_EMU_FAULT" degrade "$node" 1mbit
        sleep 4
        kill -0 "$job" 2>/dev/null && echo "running at restore"
        "$STRATA_EMU_FAULT" restore "$node"
        echo "restored at $(date +%s.%N)"
        ;;
esac
end=$(( $(date +%s) + bound ))
ended_in_time=0
while (( $(date +%s) < end )); do
    if eval "$ended"; then ended_in_time=1; break; fi
    # The launcher gone and no process of the run left: no rank can report any more (ranks behind
    # a cut link outlive mpiexec and end on their own).
    if ! kill -0 "$job" 2>/dev/null && [ -z "$(for n in $STRATA_EMU_NODES; do "$STRATA_EMU_FAULT" procs "$n"; done)" ]; then
        eval "$ended" && { ended_in_time=1; break; }
        echo "job ended at $(date +%s.%N) before every rank reported"
        break
    fi
    sleep 0.05
done
if ((ended_in_time)); then
    echo "ranks ended at $(date +%s.%N)"
elif kill -0 "$job" 2>/dev/null; then
    echo "ranks still running after $bound s"
fi
# The ranks are done; what is left of the launcher (mpiexec waiting for a proxy
# behind a cut link) gets a few seconds, then ends here.
for _ in $(seq 1 60); do kill -0 "$job" 2>/dev/null || break; sleep 0.05; done
if kill -0 "$job" 2>/dev/null; then
    echo "launcher still running after the ranks ended"
    kill "$job" 2>/dev/null
fi
wait "$job"
rc=$?
sleep 0.5
for n in $STRATA_EMU_NODES; do
    pids=$("$STRATA_EMU_FAULT" procs "$n" | tr '\n' ' ')
    [ -n "$pids" ] && echo "left on $n: $pids"
done
echo "job exit $rc"
