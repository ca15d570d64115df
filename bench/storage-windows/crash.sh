#!/bin/sh
# SPDX-License-Identifier: MIT
# Crash-restart check of sw-crash: a rank is killed with SIGKILL in the middle
# of the checkpoint loop, then a new job must resume from the last completed
# checkpoint, with every value verified (sw-crash checks the data).
#   self  rank 1 kills itself halfway through writing checkpoint 7 (of 12):
#         the restart must resume from 6;
#   kill  the harness sends kill -9 to rank 1 at a random moment after
#         checkpoint 3: the restart must resume from the last checkpoint
#         reported complete (or the next one, if it completed but was not yet
#         printed when the kill landed).
# Usage: crash.sh MPIEXEC NP PROGRAM DIR [JSON] [REPEAT] [self|kill|both]
set -eu
mpiexec=$1 np=$2 program=$3 dir=$4 json=${5:-} repeat=${6:-0} modes=${7:-both}
[ "$modes" = both ] && modes="self kill"
trap 'rm -rf "$dir"' EXIT
trap 'exit 1' INT TERM
record() { # mode killed_after resumed_from ok
    line="{\"app\":\"crash-run\",\"mode\":\"$1\",\"repeat\":$repeat,\"last_complete_before_kill\":$2,\"resumed_from\":$3,\"ok\":$4}"
    echo "$line"
    [ -z "$json" ] || echo "$line" >> "$json"
    [ "$4" = true ] || { echo "crash.sh: restart did not resume from the last complete checkpoint"; exit 1; }
}
resumed() { sed -n 's/.*"resumed_from":\([0-9]*\).*/\1/p' "$dir/restart.log"; }

for mode in $modes; do
    rm -rf "$dir"
    mkdir -p "$dir"
    if [ "$mode" = self ]; then
        if "$mpiexec" -n "$np" "$program" --dir "$dir" --steps 12 --size 4M --crash-rank 1 --crash-step 7 \
            > "$dir/crash.log" 2>&1; then
            echo "crash.sh: the job survived its own SIGKILL"; exit 1
        fi
        last=$(sed -n 's/^checkpoint \([0-9]*\) complete$/\1/p' "$dir/crash.log" | tail -1)
        "$mpiexec" -n "$np" "$program" --dir "$dir" --steps 12 --size 4M --repeat "$repeat" > "$dir/restart.log"
        from=$(resumed)
        ok=false
        [ "$last" = 6 ] && [ "$from" = 6 ] && ok=true
        record self "$last" "$from" $ok
    else
        "$mpiexec" -n "$np" "$program" --dir "$dir" --steps 200 --size 8M --step-ms 20 > "$dir/crash.log" 2>&1 &
        job=$!
        tries=0
        until grep -q '^checkpoint 3 complete$' "$dir/crash.log" 2>/dev/null; do
            tries=$((tries + 1))
            [ $tries -lt 600 ] || { kill "$job"; echo "crash.sh: no checkpoint within 60 s"; exit 1; }
            sleep 0.1
        done
        sleep "0.$(awk 'BEGIN { srand(); printf "%03d", int(rand() * 1000) }')"
        kill -9 "$(cat "$dir/pid-1")"
        wait "$job" && { echo "crash.sh: the job survived kill -9 of rank 1"; exit 1; }
        last=$(sed -n 's/^checkpoint \([0-9]*\) complete$/\1/p' "$dir/crash.log" | tail -1)
        "$mpiexec" -n "$np" "$program" --dir "$dir" --steps "$((last + 3))" --size 8M --repeat "$repeat" \
            > "$dir/restart.log"
        from=$(resumed)
        ok=false
        { [ "$from" = "$last" ] || [ "$from" = "$((last + 1))" ]; } && ok=true
        record kill "$last" "$from" $ok
    fi
done
