#!/bin/sh
# SPDX-License-Identifier: MIT
# expect_error.sh CODE PATTERN command args...: runs the command and passes
# only when it exits with CODE and its standard error matches PATTERN (grep
# -E), so a refused input is refused for the reason the message names.
expected=$1
pattern=$2
shift 2
err=$("$@" 2>&1 >/dev/null)
status=$?
printf '%s\n' "$err" >&2
if [ "$status" -ne "$expected" ]; then
    echo "expect_error: exit status $status, expected $expected: $*" >&2
    exit 1
fi
if ! printf '%s\n' "$err" | grep -Eq -- "$pattern"; then
    echo "expect_error: stderr does not match '$pattern': $*" >&2
    exit 1
fi
exit 0
