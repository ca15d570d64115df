# SPDX-License-Identifier: MIT
"""Capability checks for the Python tests, the twin of tests/support/capability.hpp.

require(condition, what) skips the test when the condition is false; with
CI=true in the environment it fails instead: CI is set up to offer every
capability, so a missing one there is a broken CI machine, and a silent skip
would hide untested code.
"""

import os

import pytest

# Where a CI failure for a missing capability points the reader.
SETUP_HINT = " (as root, scripts/kernel-setup sets up what a script can; strata doctor names the rest)"


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1")


def require(condition: bool, what: str) -> None:
    if condition:
        return
    if in_ci():
        pytest.fail(f"missing capability (a failure in CI): {what}{SETUP_HINT}")
    pytest.skip(f"missing capability: {what}")
