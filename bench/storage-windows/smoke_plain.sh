#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The DHT on strata's storage and combined windows and on the same layouts made without strata
# (sw-dht-plain: plain-storage, plain-combined) at a tiny size: every run finds every key, each
# plain window splits its bytes between memory and the file as strata's does, and all four hold the
# same table (the same checksum of where every key sits, the same heap use). A run with another
# repeat's keys must give another checksum, or the comparison could not tell tables apart.
# Usage: smoke_plain.sh MPIEXEC SW_DHT SW_DHT_PLAIN
set -euo pipefail
mpiexec=$1 dht=$2 plain=$3
dir=$(mktemp -d /var/tmp/strata-sw-plain-smoke-XXXXXX)
trap 'rm -rf "$dir"' EXIT
trap 'exit 1' INT TERM

fail() { echo "smoke_plain.sh: $*" >&2; exit 1; }
field() { # field NAME VARIANT: the value of NAME in that variant's record
  sed -n "s/.*\"variant\":\"$2\".*\"$1\":\"\{0,1\}\([0-9a-f]*\)\"\{0,1\}[,}].*/\1/p" "$dir/dht.jsonl"
}
run() { # run PROGRAM VARIANT REPEAT
  "$mpiexec" -n 2 "$1" --variant "$2" --factor 0.75 --lv 4K --repeat "$3" --dir "$dir" \
    --json "$dir/dht.jsonl" > /dev/null || fail "$2 (repeat $3) failed"
}
run "$dht" storage 1
run "$dht" combined 1
run "$plain" plain-storage 1
run "$plain" plain-combined 1
left=$(find "$dir" -type f ! -name dht.jsonl | head -5)
[[ -z $left ]] || fail "files left behind: $left"

for kind in storage combined; do
  for f in memory_bytes storage_bytes checksum heap_used; do
    a=$(field "$f" "$kind") b=$(field "$f" "plain-$kind")
    [[ -n $a && $a == "$b" ]] || fail "$f: $kind has '$a', plain-$kind '$b'"
  done
done
[[ $(field storage_bytes plain-combined) -gt 0 && $(field memory_bytes plain-combined) -gt 0 ]] ||
  fail "plain-combined is not split between memory and a file"
[[ $(field checksum storage) == "$(field checksum combined)" ]] || fail "storage and combined hold different tables"

run "$plain" plain-combined 2
other=$(sed -n '$s/.*"checksum":"\([0-9a-f]*\)".*/\1/p' "$dir/dht.jsonl")
[[ -n $other && $other != "$(field checksum combined | head -1)" ]] ||
  fail "another repeat's keys gave the same checksum ($other): it cannot tell tables apart"
echo "the plain windows hold the table strata's do: checksum $(field checksum combined)"
