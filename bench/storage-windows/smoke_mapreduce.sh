#!/bin/sh
# Generates a 4 MiB Zipf corpus, runs MR-1S (with and without progress polling) and MR-2S
# with and without checkpoints (MR-1S: in place and snapshot), and checks that all of them find the same word counts
# (each run also checks that its counts add up to the words read).
# Usage: smoke_mapreduce.sh MPIEXEC PROGRAM
set -eu
mpiexec=$1 program=$2
dir=$(mktemp -d /var/tmp/strata-sw-mr-XXXXXX)
trap 'rm -rf "$dir"' EXIT
trap 'exit 1' INT TERM
"$mpiexec" -n 1 "$program" --generate "$dir/corpus.txt" --corpus-size 4M --vocabulary 5000
for impl in "1s --checkpoint none" "1s --checkpoint windows" "1s --checkpoint snapshot" "1s --checkpoint none --no-poll" \
            "2s --checkpoint none" "2s --checkpoint mpiio" "2s --checkpoint mpiio --combine"; do
    # shellcheck disable=SC2086
    "$mpiexec" -n 2 "$program" --impl $impl --corpus "$dir/corpus.txt" --task-size 512K --table-slots 16K \
        --dir "$dir" | grep -o '"checksum":"[0-9a-f]*"' >> "$dir/checksums"
done
cat "$dir/checksums"
[ "$(wc -l < "$dir/checksums")" -eq 7 ] || { echo "a run printed no result"; exit 1; }
[ "$(sort -u "$dir/checksums" | wc -l)" -eq 1 ] || { echo "the implementations disagree"; exit 1; }
rm "$dir/corpus.txt" "$dir/checksums"
leftover=$(find "$dir" -type f | head -5)
[ -z "$leftover" ] || { echo "files left behind: $leftover"; exit 1; }
