#!/bin/sh
# SPDX-License-Identifier: MIT
# The storage-windows harness on 2 emulated nodes at tiny sizes: bench/storage-windows/run --nodes 2
# (rma's single, multiple and parallel transfers, dht and hacc at 2 and 3 ranks) and --paper (DHT and
# MapReduce, weak and strong, at 1 and 2 ranks). Every program verifies its data; this checks that both
# reports have their rows and that a run leaves nothing behind: its work directory, and the
# namespaces and cgroups of its emulation (named after the run's pid, which exec's into emulate).
# Needs root (apps/video/emulate): exits 77, skipped, otherwise (1 under CI=true).
# Usage: smoke_nodes.sh BIN_DIR   (the sw-* programs and strata-video-emulate)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
if [ "$(id -u)" -ne 0 ]; then
    # Under CI a missing capability is a failure, not a skip.
    [ "${CI:-}" = true ] && { echo "smoke_nodes.sh: needs root (apps/video/emulate)"; exit 1; }
    echo "smoke_nodes.sh: needs root (apps/video/emulate); skipped"; exit 77
fi
export STRATA_BIN_DIR="$1"
dir=$(mktemp -d /var/tmp/strata-sw-nodes-smoke-XXXXXX)
trap 'rm -rf "$dir"' EXIT
trap 'exit 1' INT TERM

left_behind() { # left_behind PID: what the emulated run of PID left (emulate's names: sv<pid>, strata-emulate-<pid>)
    tag=$(printf 'sv%s' "$1" | cut -c1-8)
    ip netns list | grep "^$tag" || true
    ls -d /sys/fs/cgroup/cpu/strata-emulate-"$1" /sys/fs/cgroup/cpuacct/strata-emulate-"$1" 2>/dev/null || true
}
run() { # run NAME ARGS...: the harness into $dir/NAME, then nothing of it left
    name=$1
    shift
    "$here/run" "$@" --repeats 1 --scale 0.002 --dir "$dir" --out "$dir/$name" &
    pid=$!
    wait "$pid" || { echo "smoke_nodes.sh: run $* failed"; exit 1; }
    left=$(left_behind "$pid")
    [ -z "$left" ] || { echo "smoke_nodes.sh: run $* left behind: $left"; exit 1; }
}

run nodes --nodes 2 --np 2,3 --rma-iters 2 --rma-sizes 64K
# Seven rows per rank count: RMA single, multiple, parallel; DHT storage, combined; HACC checkpoint, restart.
rows=$(grep -c '^| [23] ranks on 2 emulated nodes: ' "$dir/nodes/results.md" || true)
[ "$rows" -eq 14 ] || { echo "smoke_nodes.sh: $rows target rows for 2 and 3 ranks, expected 14"; exit 1; }
# The ranks ran under the yielding poll (--yield-poll on, the default), and the report says so.
grep -q 'LD_PRELOAD=libstrata-yield-poll.so' "$dir/nodes/results.md" ||
    { echo "smoke_nodes.sh: the report does not name the yielding poll"; exit 1; }

run paper --paper --np 1,2
for section in "## DHT, weak scaling" "## DHT, strong scaling" "## MapReduce word count, weak scaling" \
    "## MapReduce word count, strong scaling" "## The paper's figures and strata's, side by side"; do
    grep -q "^$section" "$dir/paper/results.md" || { echo "smoke_nodes.sh: no '$section' in the paper report"; exit 1; }
done
grep -q '"checksums_agree": false' "$dir/paper/results.json" && { echo "smoke_nodes.sh: MapReduce counts differ"; exit 1; }

# Only the two reports are left in --dir: each run removed its work directory.
leftover=$(find "$dir" -mindepth 1 -maxdepth 1 ! -name nodes ! -name paper)
[ -z "$leftover" ] || { echo "smoke_nodes.sh: left behind: $leftover"; exit 1; }
echo "smoke_nodes.sh: both reports complete, nothing left behind"
