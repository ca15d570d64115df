#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Where a 192 MiB memory cgroup's bytes go during one out-of-core DHT run at 4x the limit (the combined
# windows of the named split by default): the group's memory.stat, sampled every 3 s — anonymous memory
# (rss: the windows' memory parts), MPI's shared memory (shmem), and the page cache left for the file
# parts. A probe for docs/benchmarks/storage-windows/README.md, not a benchmark. Needs root and the cgroup
# v1 memory controller; removes the group, its processes and the data files on every exit.
# Usage: bench/storage-windows/ooc_memory_probe.sh [BIN_DIR] [VARIANT] [FACTOR] [JSON]
#   JSON: also write the samples (MiB) and the DHT's record there
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
bin=${1:-build/default/bin} variant=${2:-combined} factor=${3:-0.875} json=${4:-}
group=/sys/fs/cgroup/memory/strata-ooc-probe-$$
limit=$((192 * 1024 * 1024))
work=$(mktemp -d /var/tmp/strata-ooc-probe-XXXXXX)
child=""
cleanup() {
  local status=$?
  trap - EXIT INT TERM
  [[ -n "$child" ]] && kill -TERM "$child" 2>/dev/null
  strata_bench_kill_cgroup "$group"
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
mkdir "$group"
echo "$limit" > "$group/memory.limit_in_bytes"
lv=$((limit * 4 / 2 / 16 / 5)) # two ranks, (1 + 5 LV) x 16 bytes each, 4x the limit in all
echo "limit 192 MiB, DHT 4x (LV $lv elements per rank), variant $variant, factor $factor"
(
  echo $BASHPID > "$group/cgroup.procs"
  exec timeout 900 mpiexec -n 2 "$bin/sw-dht" --variant "$variant" --lv "$lv" --factor "$factor" --dir "$work" \
    --label probe --verify-passes 1 --json "$work/dht.jsonl"
) > "$work/log" 2>&1 &
child=$!
while kill -0 "$child" 2>/dev/null; do
  awk '$1 == "rss" || $1 == "shmem" || $1 == "cache" || $1 == "mapped_file" || $1 == "dirty" ||
       $1 == "active_file" || $1 == "inactive_file" { printf "%s %.0f MiB  ", $1, $2 / 1048576 }
       END { print "" }' "$group/memory.stat" | tee -a "$work/samples.txt"
  sleep 3
done
wait "$child"
child=""
python3 - "$work/dht.jsonl" "$work/samples.txt" "$json" "$variant" "$factor" <<'PY'
import json, sys
record = json.loads(open(sys.argv[1]).readline())
print({k: record[k] for k in ("init_seconds", "insert_seconds", "sync_seconds", "seconds")})
if sys.argv[3]:
    samples = []
    for line in open(sys.argv[2]):
        words = line.split()
        samples.append({words[i]: float(words[i + 1]) for i in range(0, len(words) - 2, 3)})
    doc = {"suite": "storage-windows", "probe": "ooc-memory", "limit_mib": 192, "ratio": 4, "variant": sys.argv[4],
           "factor": float(sys.argv[5]), "sample_period_s": 3, "samples_mib": samples, "dht": record}
    open(sys.argv[3], "w").write(json.dumps(doc, indent=1) + "\n")
PY
