#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# monitor_bench_umt_smoke.sh must fail when a program prints its result line
# and then exits with an error (the exit status used to be lost inside $(...)).
# Stand-ins for FWI and heat print a good UMT_RESULT line and exit 3 (the
# synthetic one exits 0, so only the lost statuses can fail the run).
# Usage: monitor_bench_umt_smoke_can_fail.sh <smoke script> <scratch dir>
set -uo pipefail
smoke=$1
bin=$(mktemp -d "$2/strata-umt-fake-XXXXXX")
trap 'rm -rf "$bin"' EXIT
for program in strata-umt-fwi:3 strata-umt-heat:3 strata-umt-synthetic:0; do
  printf '#!/bin/sh\necho '"'"'UMT_RESULT {"checksum":"42"}'"'"'\nexit %s\n' "${program#*:}" > "$bin/${program%:*}"
  chmod +x "$bin/${program%:*}"
done
if "$smoke" "$bin" "$2"; then
  echo "FAIL: the smoke test passed although FWI and heat exited with status 3" >&2
  exit 1
fi
echo "the smoke test fails when a program exits with an error after its result line"
