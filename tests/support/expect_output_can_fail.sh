#!/bin/sh
# SPDX-License-Identifier: MIT
# expect_output.sh must fail where PASS_REGULAR_EXPRESSION passed: a count of
# 10 where 0 is expected, and the right line with a wrong exit status; and
# pass on the right line with the right status.
# Usage: expect_output_can_fail.sh <path of expect_output.sh>
check=$1
line='stencil: [0-9]+ blocks x [0-9]+ points, [0-9]+ iterations: checksum [0-9.]+, 0 points differ from the serial result'
good='stencil: 8 blocks x 64 points, 40 iterations: checksum 1.5, 0 points differ from the serial result'
bad='stencil: 8 blocks x 64 points, 40 iterations: checksum 1.5, 10 points differ from the serial result'
if sh "$check" 0 "$line" -- echo "$bad"; then
    echo "FAIL: '10 points differ' passed" >&2
    exit 1
fi
if sh "$check" 0 "$line" -- sh -c 'echo "$1"; exit 3' sh "$good"; then
    echo "FAIL: exit status 3 passed" >&2
    exit 1
fi
if ! sh "$check" 0 "$line" -- echo "$good"; then
    echo "FAIL: the right line with status 0 did not pass" >&2
    exit 1
fi
echo "expect_output.sh fails on a wrong count and on a wrong exit status"
