#!/bin/sh
# SPDX-License-Identifier: MIT
# expect_exit.sh CODE command args...: runs the command and passes only when
# its exit status is CODE ("abort": killed by SIGABRT, as a failed ocrAssert
# ends a program). The output stays visible in the test log.
expected=$1
shift
"$@"
status=$?
if [ "$expected" = abort ]; then
    expected=134  # 128 + SIGABRT, as the shell reports a child killed by it
fi
if [ "$status" -ne "$expected" ]; then
    echo "expect_exit: exit status $status, expected $expected: $*" >&2
    exit 1
fi
exit 0
