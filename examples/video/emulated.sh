#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The video pipeline on two emulated nodes (docs/video.md, "Emulated nodes"):
# n0 at a whole core, n1 at 30 % of one behind a 1 Gbit/s link, each a network
# namespace with its own cgroup CPU quota (apps/video/emulate; needs root).
# Input, output and one worker run on n0, a second worker on n1; ZeroMQ with
# credits carries the frames over TCP between the namespaces. The output must
# equal the serial run's, and the second worker must have run on n1.
#
#   examples/video/emulated.sh          (as root, from the repository, after the default build)
#
# STRATA_BIN_DIR names the directory of strata-video (default build/default/bin).
set -euo pipefail
bin=$(realpath "${STRATA_BIN_DIR:-build/default/bin}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

ffmpeg -v error -nostdin -f lavfi -i testsrc=size=160x120:rate=25 -frames:v 12 -pix_fmt gray -c:v ffv1 \
  "$work/in.mkv"
"$bin/strata-video" --impl serial -i "$work/in.mkv" -o "$work/serial.raw"

# The job runs in the root namespace; STRATA_EMU_MPIEXEC starts each rank on its
# node, and $1 becomes n0's address (where the input listens).
export PROGRAM="$bin/strata-video" WORK="$work"
"$bin/strata-video-emulate" --nodes n0=100,n1=30 --rate 1gbit -- sh -c 'set -- $STRATA_EMU_ADDRS
  $STRATA_EMU_MPIEXEC -hosts n0:3,n1:1 -n 4 "$PROGRAM" --impl zmq-credit -i "$WORK/in.mkv" -o "$WORK/zmq.raw" \
    --zmq-host "$1" --zmq-port 27710 --stats "$WORK"' > "$work/emulate.log" 2>&1 ||
  { cat "$work/emulate.log" >&2; exit 1; }

cmp -s "$work/serial.raw" "$work/zmq.raw" || { echo "zmq-credit: differs from the serial output" >&2; exit 1; }
echo "zmq-credit on n0 (a core) and n1 (30 % of a core, 1 Gbit/s): the same bytes as the serial run"
for rank in 2 3; do
  node=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["node"])' "$work/rank$rank.json")
  echo "worker rank $rank ran on $node"
done
