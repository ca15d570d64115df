# SPDX-License-Identifier: MIT
"""End-to-end tests of `strata ocr --external-config` / `--external-exposure`
(docs/external.md): bad values are refused before the program runs, naming
the option, the file, the line, the entry, the key and the cause; a good file
runs the OCR DAG of normal and external tasks (tests/ocr/apps/external_dag.c).

The binaries come from $STRATA_BIN's directory, else <repo>/build/default/bin.
"""

import os
import subprocess
from pathlib import Path

import pytest
from capability import in_ci

REPO = Path(__file__).resolve().parents[2]
STRATA_BIN = Path(os.environ.get("STRATA_BIN", REPO / "build" / "default" / "bin" / "strata"))
DAG = STRATA_BIN.parent / "ocr_app_external_dag"
CONFIG = REPO / "tests" / "ocr" / "apps" / "external_dag.toml"


def strata_ocr(*args, env=None):
    for binary in (STRATA_BIN, DAG):
        if not binary.exists():
            if in_ci():
                pytest.fail(f"{binary} is not built")
            pytest.skip(f"{binary} is not built (set STRATA_BIN)")
    environment = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_EXTERNAL_")}
    environment.update(env or {})
    return subprocess.run(
        [str(STRATA_BIN), "ocr", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=environment,
    )


def test_a_config_with_an_unknown_key_is_refused_before_the_program_runs(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[sort]\ncommand = "sort -n [in:0]"\ncomand = "typo"\n')
    result = strata_ocr("--external-config", str(bad), str(DAG), "1000")
    assert result.returncode == 2, result
    assert f"--external-config={bad}: {bad}:3: entry [sort]: key comand" in result.stderr, result.stderr
    assert "unknown key" in result.stderr
    assert "sort:" not in result.stdout, "the program ran"


def test_a_missing_config_file_is_refused_naming_it(tmp_path):
    missing = tmp_path / "none.toml"
    result = strata_ocr("--external-config", str(missing), str(DAG), "1000")
    assert result.returncode == 2, result
    assert str(missing) in result.stderr and "cannot read it" in result.stderr, result.stderr


def test_an_unknown_exposure_is_refused_naming_the_option_and_value():
    result = strata_ocr("--external-config", str(CONFIG), "--external-exposure", "nfs", str(DAG), "1000")
    assert result.returncode == 2, result
    assert "--external-exposure=nfs: not an exposure (expected auto, memfd or fuse)" in result.stderr


@pytest.mark.parametrize("exposure", ["auto", "memfd", "fuse"])
def test_the_dag_runs_through_strata_ocr_with_each_exposure(exposure):
    if exposure == "fuse" and not os.access("/dev/fuse", os.R_OK | os.W_OK):
        if in_ci():
            pytest.fail("/dev/fuse is needed for exposure=fuse")
        pytest.skip("no /dev/fuse")
    result = strata_ocr("--external-config", str(CONFIG), "--external-exposure", exposure, str(DAG), "500")
    assert result.returncode == 0, result
    assert "sum of the numbers: 125250 (expected 125250)" in result.stdout, result.stdout
    assert "external_dag: every result is right" in result.stdout


def test_the_config_path_reaches_the_program_absolute(tmp_path):
    # A relative --external-config still works from a program that changed directory:
    # strata ocr passes it as an absolute path (the DAG itself does not chdir, so
    # check the variable it sees through a shell program instead).
    config = tmp_path / "ext.toml"
    config.write_text('[sort]\ncommand = "true"\n')
    result = subprocess.run(
        [
            str(STRATA_BIN),
            "ocr",
            "--external-config",
            "ext.toml",
            "sh",
            "-c",
            'printf %s "$STRATA_EXTERNAL_CONFIG"',
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result
    assert result.stdout == str(config), result.stdout
