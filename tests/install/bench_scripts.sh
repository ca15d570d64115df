#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every benchmark suite's run script answers --help with its options (--out
# among them) and exits 0 without running anything; an unknown option or an
# option without its value exits 2 before any work (no report directory made).
# `strata bench --list` lists every suite; an unknown suite or no suite is a
# usage error (2). Runs from the build tree.
# Usage: bench_scripts.sh <build dir> <source dir>
source "$(dirname "$0")/common.sh"
strata=$build/bin/strata

# Runs "$@" with a deadline: a suite that starts its benchmark does not answer in time.
quick() { timeout 20 "$@"; }

suites=()
for run in "$src"/bench/*/run; do
  suites+=("$(basename "$(dirname "$run")")")
done
((${#suites[@]} >= 6)) || fail "only ${#suites[@]} suites under $src/bench"
for suite in "${suites[@]}"; do
  run=$src/bench/$suite/run
  help=$(quick "$run" --help) || fail "$run --help exited $?"
  grep -q "^Usage: bench/$suite/run" <<< "$help" || fail "$run --help has no usage line: $help"
  grep -q -- "--out DIR" <<< "$help" || fail "$run --help does not list --out DIR"
  for bad in "--no-such-option" "--out"; do
    set +e
    message=$(quick "$run" --out "$tmp/$suite-out" $bad 2>&1 > /dev/null)
    code=$?
    set -e
    [[ $code == 2 ]] || fail "$run --out DIR $bad exited $code, expected 2 (usage): $message"
    grep -q "bench/$suite/run: " <<< "$message" || fail "$run $bad: the error does not name the script: $message"
    [[ ! -e "$tmp/$suite-out" ]] || fail "$run $bad made its report directory"
  done
  # Through the strata command, with the suite's own --help.
  quick "$strata" bench "$suite" --help | has "^Usage: bench/$suite/run" || fail "strata bench $suite --help"
done

list=$("$strata" bench --list) || fail "strata bench --list exited $?"
for suite in "${suites[@]}"; do
  grep -q "^$suite " <<< "$list" || fail "strata bench --list does not list $suite: $list"
done
json=$("$strata" bench --list --json) || fail "strata bench --list --json exited $?"
names=$(python3 -c 'import json, sys; print(" ".join(sorted(s["name"] for s in json.load(sys.stdin))))' <<< "$json") ||
  fail "strata bench --list --json is not JSON: $json"
expected=$(printf '%s\n' "${suites[@]}" | LC_ALL=C sort | tr '\n' ' ')
[[ "$names " == "$expected" ]] || fail "strata bench --list --json lists '$names', the tree has '$expected'"
expect_usage_error() {
  set +e
  message=$("$@" 2>&1)
  code=$?
  set -e
  [[ $code == 2 ]] || fail "$* exited $code, expected 2: $message"
  echo "$message"
}
expect_usage_error "$strata" bench no-such-suite | has "suite=no-such-suite: no such suite" ||
  fail "strata bench no-such-suite does not name the suite"
expect_usage_error "$strata" bench > /dev/null
expect_usage_error "$strata" bench ../etc > /dev/null
expect_usage_error "$strata" demo --only no-such-section | has "no-such-section" ||
  fail "strata demo --only no-such-section does not name the section"
expect_usage_error "$strata" --no-such-option > /dev/null
echo "bench scripts: ok"
