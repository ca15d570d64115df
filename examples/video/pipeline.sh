#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Paper 003's video pipeline (docs/video.md) three ways on one machine: the
# serial program, MPI with one send buffer per worker slot, and strata's DSM.
# Every parallel output must equal the serial one byte for byte.
#
#   examples/video/pipeline.sh          (from the repository, after the default build)
#
# STRATA_BIN_DIR names the directory of strata-video (default build/default/bin).
set -euo pipefail
bin=${STRATA_BIN_DIR:-build/default/bin}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# 12 frames of FFmpeg's test pattern, 160x120 grey, FFV1 in Matroska.
ffmpeg -v error -nostdin -f lavfi -i testsrc=size=160x120:rate=25 -frames:v 12 -pix_fmt gray -c:v ffv1 \
  "$work/in.mkv"
"$bin/strata-video" --impl serial -i "$work/in.mkv" -o "$work/serial.raw"
echo "serial: $(stat -c %s "$work/serial.raw") bytes of filtered frames"

# run IMPL RANKS WHAT: one parallel run, compared with the serial output.
run() {
  mpiexec -n "$2" "$bin/strata-video" --impl "$1" -i "$work/in.mkv" -o "$work/$1.raw"
  cmp -s "$work/serial.raw" "$work/$1.raw" || { echo "$1: differs from the serial output" >&2; exit 1; }
  echo "$1 on $2 ranks ($3): the same bytes"
}
run mpi-async-multi 4 "input, output, 2 workers"
run dsm 5 "1 DSM server, input, output, 2 workers"
