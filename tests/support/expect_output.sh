#!/bin/sh
# SPDX-License-Identifier: MIT
# expect_output.sh CODE LINE_REGEX... -- COMMAND ARGS...
#
# Runs COMMAND and passes only when its exit status is CODE and, for every
# LINE_REGEX (a POSIX extended regular expression), some line of its output
# (stdout and stderr together) matches it as a whole line. Unlike CTest's
# PASS_REGULAR_EXPRESSION, which ignores the exit status, a run that prints
# the right line and then fails still fails; and whole-line matching means
# "10 points differ" never passes for "0 points differ". The output stays
# visible in the test log.
if [ "$#" -lt 3 ]; then
    echo "usage: expect_output.sh CODE LINE_REGEX... -- COMMAND ARGS..." >&2
    exit 2
fi
expected=$1
shift
patterns=$(mktemp) || exit 2
output=$(mktemp) || { rm -f "$patterns"; exit 2; }
trap 'rm -f "$patterns" "$output"' EXIT
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do
    printf '%s\n' "$1" >>"$patterns"
    shift
done
if [ "$#" -lt 2 ]; then
    echo "expect_output: no command after --" >&2
    exit 2
fi
shift
"$@" >"$output" 2>&1
status=$?
cat "$output"
failed=0
if [ "$status" -ne "$expected" ]; then
    echo "expect_output: exit status $status, expected $expected: $*" >&2
    failed=1
fi
while IFS= read -r pattern; do
    if ! grep -Eqx -e "$pattern" "$output"; then
        echo "expect_output: no output line is exactly /$pattern/: $*" >&2
        failed=1
    fi
done <"$patterns"
exit "$failed"
