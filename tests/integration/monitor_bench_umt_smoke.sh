#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The UMT benchmark programs on tiny inputs: each finishes, prints its result
# line, and FWI and heat compute the same checksum with the monitor as without
# it (the dependences held while blocked workers were replaced). Every result
# line's CPU figures nest: the compute kernels' time is part of the task
# bodies' time, which is part of the process's.
# Usage: monitor_bench_umt_smoke.sh <bin dir> <scratch dir>
set -euo pipefail
# Command substitutions inherit set -e, and checksum() checks each program's
# exit status itself: a program that prints its result line and then fails
# fails the test.
shopt -s inherit_errexit
bin=$1
dir=$(mktemp -d "$2/strata-umt-smoke-XXXXXX")
trap 'rm -rf "$dir"' EXIT
monitor=proc
[[ "$(id -u)" == 0 ]] && monitor=ebpf

field() { sed -E "s/.*\"$1\":([0-9.]+).*/\1/" <<< "$2"; }

cpu_figures_nest() {
  local kernel body process
  kernel=$(field task_cpu_s "$1") body=$(field task_body_cpu_s "$1") process=$(field cpu_s "$1")
  if ! awk -v k="$kernel" -v b="$body" -v p="$process" 'BEGIN { exit !(k > 0 && k <= b && b <= p) }'; then
    echo "$2: CPU figures do not nest: kernels $kernel s, task bodies $body s, process $process s" >&2
    exit 1
  fi
}

checksum() {
  local output line status=0
  output=$(STRATA_MONITOR=$1 timeout 60 "${@:2}") || status=$?
  if (( status != 0 )); then
    echo "${*:2} (STRATA_MONITOR=$1) exited with status $status" >&2
    exit 1
  fi
  line=$(grep '^UMT_RESULT ' <<< "$output") || { echo "no result line from ${*:2} (STRATA_MONITOR=$1)" >&2; exit 1; }
  cpu_figures_nest "$line" "${*:2} (STRATA_MONITOR=$1)"
  sed -E 's/.*"checksum":"?([^",}]*).*/\1/' <<< "$line"
}

fwi=("$bin/strata-umt-fwi" --slices=6 --slice-kib=64 --steps=4 --sweeps=2 --io-freq=1 --direct=1 "--file=$dir/fwi.dat")
heat=("$bin/strata-umt-heat" --blocks=4 --block-size=64 --iters=4 --sweeps=2 --ckpt-every=2 --direct=1 "--file=$dir/heat.dat")
synthetic=("$bin/strata-umt-synthetic" --tasks=30 --compute-iters=100000 --block=mix --block-us=500
           --io-bytes=65536 --file-bytes=4194304 "--file=$dir/synthetic.dat")
for program in fwi heat; do
  declare -n command=$program
  off=$(checksum off "${command[@]}")
  on=$(checksum "$monitor" "${command[@]}")
  if [[ "$off" != "$on" ]]; then
    echo "$program: checksum $on with STRATA_MONITOR=$monitor, $off without" >&2
    exit 1
  fi
  echo "$program: checksum $off with and without the $monitor monitor"
done
checksum "$monitor" "${synthetic[@]}" > /dev/null
echo "synthetic: mix of pipe, O_DIRECT and fsync blocks finished with the $monitor monitor"
