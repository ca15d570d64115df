#!/bin/sh
# SPDX-License-Identifier: MIT
# Generates a 4 MiB Zipf corpus, runs MR-1S (with and without progress polling) and MR-2S
# with and without checkpoints (MR-1S: in place, snapshot and non-blocking snapshot), and checks that all of them find
# the same word counts (each run also checks that its counts add up to the words read). The snapshot runs check
# every checkpoint slot, read back from its file once durable, against the counts of the rounds up to its cut
# recomputed from the corpus (--verify-cuts), with one rank made slow (--skew-ms) so that a cut letting the next
# round through, or taken before the round's updates landed, fails.
# Usage: smoke_mapreduce.sh MPIEXEC PROGRAM
set -eu
mpiexec=$1 program=$2
dir=$(mktemp -d /var/tmp/strata-sw-mr-XXXXXX)
trap 'rm -rf "$dir"' EXIT
trap 'exit 1' INT TERM
"$mpiexec" -n 1 "$program" --generate "$dir/corpus.txt" --corpus-size 4M --vocabulary 5000
for impl in "1s --checkpoint none" "1s --checkpoint windows" "1s --checkpoint snapshot --verify-cuts --skew-ms 20" \
            "1s --checkpoint snapshot-nb --verify-cuts --skew-ms 20" "1s --checkpoint snapshot-nb --verify-cuts" \
            "1s --checkpoint none --no-poll" \
            "2s --checkpoint none" "2s --checkpoint mpiio" "2s --checkpoint mpiio --combine"; do
    # shellcheck disable=SC2086
    "$mpiexec" -n 2 "$program" --impl $impl --corpus "$dir/corpus.txt" --task-size 512K --table-slots 16K \
        --dir "$dir" > "$dir/out"
    grep -o '"checksum":"[0-9a-f]*"' "$dir/out" >> "$dir/checksums"
    case $impl in
        *--verify-cuts*)
            made=$(grep -o '"checkpoints":[0-9]*' "$dir/out" | cut -d: -f2)
            checked=$(grep -o '"cuts_verified":[0-9]*' "$dir/out" | cut -d: -f2)
            [ "${made:-0}" -gt 1 ] && [ "$made" = "$checked" ] ||
                { cat "$dir/out"; echo "$impl: $checked of $made checkpoints verified"; exit 1; } ;;
    esac
done
rm "$dir/out"
cat "$dir/checksums"
[ "$(wc -l < "$dir/checksums")" -eq 9 ] || { echo "a run printed no result"; exit 1; }
[ "$(sort -u "$dir/checksums" | wc -l)" -eq 1 ] || { echo "the implementations disagree"; exit 1; }
rm "$dir/corpus.txt" "$dir/checksums"
leftover=$(find "$dir" -type f | head -5)
[ -z "$leftover" ] || { echo "files left behind: $leftover"; exit 1; }
