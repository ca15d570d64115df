# SPDX-License-Identifier: MIT
"""The examples in the strata package's docstrings run, and pass (issue 16)."""

import doctest


def test_the_package_docstrings_run_as_doctests(strata_module, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    result = doctest.testmod(strata_module, optionflags=doctest.ELLIPSIS, report=True)
    assert result.attempted >= 20, result  # examples exist: the test can fail by finding none
    assert result.failed == 0, result
