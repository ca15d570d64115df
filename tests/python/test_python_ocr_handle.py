# SPDX-License-Identifier: MIT
"""OCR data blocks as shared objects from Python (docs/runtime.md, "Shared data
blocks"): a Python process loads a block of a running OCR program by its
handle (strata.open_handle), reads the program's bytes and writes bytes the
program then reads, with no copy; the segment outlives the program while
Python holds the array and goes with the array; malformed and dead handles
raise naming the cause.

The program is tests/ocr/shared_block.c, from $STRATA_BIN's directory, else
<repo>/build/default/bin.
"""

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from capability import in_ci

REPO = Path(__file__).resolve().parents[2]
STRATA_BIN = Path(os.environ.get("STRATA_BIN", REPO / "build" / "default" / "bin" / "strata"))
PROGRAM = STRATA_BIN.parent / "ocr_shared_block"


def start_program(size: int) -> subprocess.Popen:
    if not PROGRAM.exists():
        if in_ci():
            pytest.fail(f"{PROGRAM} is not built")
        pytest.skip(f"{PROGRAM} is not built (set STRATA_BIN)")
    return subprocess.Popen(
        [str(PROGRAM), str(size)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "STRATA_OCR_DB_PLACEMENT"},
    )


def expected_bytes(size: int) -> np.ndarray:
    i = np.arange(size, dtype=np.uint64)
    return ((i * 131 + 7) >> 3).astype(np.uint8)


def test_python_reads_and_writes_a_running_ocr_programs_block_by_its_handle(strata_module):
    size = 4 << 20
    program = start_program(size)
    try:
        line = program.stdout.readline()
        assert line.startswith("handle shm:strata-ocr-") and line.rstrip().endswith(":rw"), (
            line + program.stderr.read()
        )
        block = strata_module.open_handle(line.split()[1])
        assert block.dtype == np.uint8 and block.size == size and block.flags.writeable
        assert np.array_equal(block, expected_bytes(size)), "Python sees other bytes than the program wrote"
        block[4096 : 4096 + 32] = np.frombuffer(b"written through the handle (py) ", np.uint8)
        out, err = program.communicate("go\n", timeout=60)
    finally:
        if program.poll() is None:
            program.kill()
    assert program.returncode == 0, err
    assert "seen written through the handle (py) \n" in out, out + err
    # The program destroyed the block and ended: the segment lives on while Python holds it.
    assert np.array_equal(block[:4096], expected_bytes(4096))


def test_the_segment_of_a_block_goes_with_its_last_user(strata_module):
    program = start_program(1 << 20)
    line = program.stdout.readline()
    text = line.split()[1]
    name = text.split(":")[1]
    block = strata_module.open_handle(text)
    program.communicate("go\n", timeout=60)
    assert program.returncode == 0
    # The program is gone; opening the segment again still works while we hold it.
    again = strata_module.open_handle(text)
    assert np.array_equal(again, block)
    del again, block
    with pytest.raises(strata_module.Error, match=name) as raised:
        strata_module.open_handle(text)
    assert raised.value.code == "not_found"


@pytest.mark.parametrize(
    "text, fault",
    [
        ("/dev/shm/block.bin", "not a handle of the form shm:<segment>"),
        ("shm:seg:1:2:30:4", "not a handle of the form"),
        ("shm:seg:1:zz:30:4:ro", "the generation 'zz' is not a hexadecimal number"),
        ("shm:seg:1:2:30:4:wx", "the access 'wx' is neither ro nor rw"),
    ],
)
def test_a_malformed_handle_raises_value_error_naming_the_text_and_the_fault(strata_module, text, fault):
    with pytest.raises(ValueError, match="handle=") as raised:
        strata_module.open_handle(text)
    assert text in str(raised.value) and fault in str(raised.value)
