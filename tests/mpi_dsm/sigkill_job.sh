# SPDX-License-Identifier: MIT
# Sourced by the DSM's SIGKILL tests (dsm_failure_test.sh, dsm_lock_test.sh,
# dsm_replication_test.sh): runs a 5-rank job in which one rank is SIGKILLed,
# and checks the reports each survivor wrote to <dir>/rank<r>.txt.
#
# Launch: each rank gets its own hydra proxy (-launcher fork, one "host" per
# rank), because MPICH 4.0's single proxy for all local ranks can itself fail
# when one of its ranks dies, and then takes the survivors down with it;
# -disable-auto-cleanup keeps mpiexec from killing the survivors. mpiexec's
# exit code reflects the killed rank, so it is not the verdict: every
# survivor's report is.
#
#   . sigkill_job.sh; run_job <name> <hang bound s> <mpiexec> <program> ARGS...  (the report dir is
#   appended to ARGS); then expect/absent <rank> <fixed text>; finish
set -u
fail=0
run_job() {
    name=$1 bound=$2 mpiexec=$3 program=$4
    shift 4
    dir=$(mktemp -d "/tmp/strata-$name.XXXXXX") || exit 1
    trap 'rm -rf "$dir"' EXIT
    start=$(date +%s)
    # A generous hang bound, not a timing: the survivors' errors come after the 2 s timeout.
    timeout -k 5 "$bound" "$mpiexec" -disable-auto-cleanup -launcher fork \
        -hosts 127.0.0.1,127.0.0.2,127.0.0.3,127.0.0.4,127.0.0.5 -ppn 1 -n 5 \
        "$program" "$@" "$dir" >"$dir/out" 2>&1
    rc=$?
    elapsed=$(( $(date +%s) - start ))
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        echo "FAIL: the job hung (killed by the $bound s bound after ${elapsed} s)"; fail=1
    fi
}
expect() {  # expect <rank> <fixed text>
    if ! grep -qF -- "$2" "$dir/rank$1.txt" 2>/dev/null; then
        echo "FAIL: rank $1 did not report: $2"; fail=1
    fi
}
absent() {  # absent <rank> <fixed text>
    if grep -qF -- "$2" "$dir/rank$1.txt" 2>/dev/null; then
        echo "FAIL: rank $1 reported: $2 (it must not)"; fail=1
    fi
}
# Every survivor's "done after <s> s" within <bound s>.
done_within() {
    for f in "$dir"/rank*.txt; do
        secs=$(sed -n 's/.*done after \([0-9]*\)\..*/\1/p' "$f")
        if [ -n "$secs" ] && [ "$secs" -gt "$1" ]; then
            echo "FAIL: $(basename "$f"): took $secs s (bound $1 s)"; fail=1
        fi
    done
}
finish() {
    echo "--- reports (mpiexec exit $rc after ${elapsed} s) ---"
    cat "$dir"/rank*.txt
    [ "$fail" -eq 0 ] || { echo "--- mpiexec output ---"; cat "$dir/out"; }
    exit "$fail"
}
