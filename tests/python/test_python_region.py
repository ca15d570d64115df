# SPDX-License-Identifier: MIT
"""strata.Region from Python: memory / storage / combined regions as zero-copy
numpy views, sync and discard checked against the file read with plain open(),
and bad arguments that raise ValueError naming them and leave nothing behind."""

import os
import subprocess
import sys

import numpy as np
import pytest

PAGE = os.sysconf("SC_PAGE_SIZE")


def mapping_of(pid: int, address: int) -> str:
    """The line of /proc/<pid>/maps that holds `address`."""
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
            if lo <= address < hi:
                return line
    raise AssertionError(f"{address:#x} is not mapped")


def test_a_memory_region_is_zeroed_and_numpy_writes_land_in_its_pages(strata_module):
    r = strata_module.Region.memory(3 * PAGE + 5)
    a = r.array()
    assert a.shape == (3 * PAGE + 5,) and a.dtype == np.uint8 and not a.any()
    a[:] = 9
    b = np.asarray(r)
    m = memoryview(r) if sys.version_info >= (3, 12) else memoryview(r.array())
    # Three views of the same bytes: one address, no copy.
    assert b.__array_interface__["data"][0] == a.__array_interface__["data"][0]
    assert b[-1] == 9 and m[0] == 9
    del a, b, m
    r.close()


def test_numpy_writes_reach_the_storage_file_after_sync(strata_module, tmp_path):
    path = tmp_path / "data.bin"
    r = strata_module.Region.storage(4 * PAGE, path)
    assert r.kind == "storage" and r.path == str(path) and r.storage_bytes == 4 * PAGE
    a = r.array(np.float64)
    expected = np.arange(a.size, dtype=np.float64) * 0.5
    a[:] = expected
    line = mapping_of(os.getpid(), a.__array_interface__["data"][0])
    assert str(path) in line  # the array's pages are the file's mapping, not a copy
    r.sync()
    with open(path, "rb") as f:
        on_disk = f.read()
    assert on_disk == expected.tobytes()
    del a
    r.close()
    assert os.path.getsize(path) == 4 * PAGE  # close without unlink keeps the file


def test_a_storage_region_reopens_what_an_earlier_one_wrote(strata_module, tmp_path):
    path = tmp_path / "restart.bin"
    with open(path, "wb") as f:
        f.write(b"\x11" * PAGE + b"\x22" * PAGE)
    r = strata_module.Region.storage(PAGE, path, offset=PAGE)
    a = r.array()
    assert set(a.tolist()) == {0x22}
    del a
    r.close()


def test_discard_drops_unsynced_changes_and_keeps_synced_ones(strata_module, tmp_path):
    path = tmp_path / "discard.bin"
    r = strata_module.Region.storage(2 * PAGE, path, writeback="explicit_sync")
    a = r.array()
    a[:PAGE] = 1
    r.sync()
    a[:] = 2  # never synced
    del a
    r.close(discard=True)
    with open(path, "rb") as f:
        data = f.read()
    assert data == b"\x01" * PAGE + b"\x00" * PAGE


def test_discard_with_kernel_writeback_is_refused_and_the_region_stays_open(strata_module, tmp_path):
    r = strata_module.Region.storage(PAGE, tmp_path / "k.bin")
    with pytest.raises(ValueError, match="discard"):
        r.close(discard=True)
    assert r.is_open
    r.close(unlink=True)
    assert not (tmp_path / "k.bin").exists()


def test_a_combined_region_splits_memory_and_storage_at_the_factor(strata_module, tmp_path):
    path = tmp_path / "c.bin"
    r = strata_module.Region.combined(8 * PAGE, path, factor=0.25, order="storage_first")
    assert (r.memory_bytes, r.storage_bytes) == (2 * PAGE, 6 * PAGE)
    assert r.tier(0) == "storage" and r.tier(8 * PAGE - 1) == "memory"
    a = r.array()
    a[:] = 3
    r.sync()
    with open(path, "rb") as f:
        assert f.read() == b"\x03" * (6 * PAGE)  # only the storage part is in the file
    del a
    r.close(unlink=True)
    assert not path.exists()


def test_close_refuses_while_an_array_views_the_region_and_the_array_stays_valid(strata_module):
    strata = strata_module
    r = strata.Region.memory(PAGE)
    a = r.array()
    with pytest.raises(strata.Error, match="still view") as e:
        r.close()
    assert e.value.code == "busy"
    a[0] = 1  # still mapped
    del a
    r.close()
    with pytest.raises(strata.Error, match="region: closed") as e:
        r.array()
    assert e.value.code == "invalid_argument"


def test_an_array_keeps_its_region_mapped_after_the_region_object_is_dropped(strata_module, tmp_path):
    path = tmp_path / "alive.bin"
    a = strata_module.Region.storage(PAGE, path).array()
    a[:] = 5  # the Region wrapper is gone; the array holds the mapping
    assert str(path) in mapping_of(os.getpid(), a.__array_interface__["data"][0])
    address = a.__array_interface__["data"][0]
    del a
    import gc

    gc.collect()
    with open(f"/proc/{os.getpid()}/maps") as f:
        assert str(path) not in f.read()  # unmapped once the last view went
    assert address


@pytest.mark.parametrize(
    "make, names",
    [
        (lambda s, p: s.Region.storage(PAGE, p, offset=3), ["offset=3", "page size"]),
        (lambda s, p: s.Region.storage(PAGE, p, writeback="later"), ["writeback", "later"]),
        (lambda s, p: s.Region.combined(PAGE, p, factor=1.5), ["factor=1.5"]),
        (lambda s, p: s.Region.combined(PAGE, p, factor="most"), ["factor", "most"]),
        (lambda s, p: s.Region.combined(PAGE, p, order="middle"), ["order", "middle"]),
        (lambda s, p: s.Region.storage(0, p), ["size"]),
        (lambda s, p: s.Region.storage(PAGE, ""), ["path"]),
        (lambda s, p: s.Region.memory(PAGE).advise("often"), ["advice", "often"]),
    ],
)
def test_bad_arguments_raise_value_error_naming_them_and_leave_nothing_behind(
    strata_module, tmp_path, make, names
):
    path = tmp_path / "bad.bin"
    with pytest.raises(ValueError) as e:
        make(strata_module, path)
    for name in names:
        assert name in str(e.value), (name, str(e.value))
    assert os.listdir(tmp_path) == []


def test_a_symbolic_link_is_refused_and_its_target_untouched(strata_module, tmp_path):
    strata = strata_module
    target = tmp_path / "target"
    target.write_bytes(b"keep")
    (tmp_path / "link").symlink_to(target)
    with pytest.raises(strata.Error) as e:
        strata.Region.storage(PAGE, tmp_path / "link")
    assert e.value.code == "permission_denied" and "link" in str(e.value)
    assert target.read_bytes() == b"keep"


def test_create_only_refuses_an_existing_file(strata_module, tmp_path):
    strata = strata_module
    path = tmp_path / "exists.bin"
    path.write_bytes(b"x")
    with pytest.raises(strata.Error) as e:
        strata.Region.storage(PAGE, path, create_only=True)
    assert e.value.code == "already_exists"
    assert path.read_bytes() == b"x"


def test_a_dtype_that_does_not_divide_the_size_is_a_value_error(strata_module):
    r = strata_module.Region.memory(10)
    with pytest.raises(ValueError, match="dtype=float64"):
        r.array(np.float64)
    r.close()


def test_a_storage_region_outlives_a_killed_writer_up_to_its_last_sync(strata_module, tmp_path):
    # A real crash: the child syncs one page, dirties another with explicit
    # write-back, and is killed; the file holds exactly the synced page.
    path = tmp_path / "crash.bin"
    child = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, signal, sys, strata\n"
            "r = strata.Region.storage(2 * os.sysconf('SC_PAGE_SIZE'), sys.argv[1], writeback='explicit_sync')\n"
            "a = r.array(); p = os.sysconf('SC_PAGE_SIZE')\n"
            "a[:p] = 7; r.sync(); a[p:] = 8\n"
            "os.kill(os.getpid(), signal.SIGKILL)\n",
            str(path),
        ],
        env=os.environ,
        timeout=60,
    )
    assert child.returncode == -9
    with open(path, "rb") as f:
        assert f.read() == b"\x07" * PAGE + b"\x00" * PAGE


def test_the_stubs_and_annotations_describe_regions_for_editors(strata_module):
    import typing
    from pathlib import Path

    stub = (Path(strata_module.__file__).parent / "_strata.pyi").read_text()
    assert "class _Region:" in stub and "def storage(size: int, path: str, offset: int" in stub
    assert "def _make_blob(self, data: bytes) -> Handle" in stub
    hints = typing.get_type_hints(strata_module.Region.storage)
    assert {"size", "path", "offset", "writeback", "return"} <= set(hints)
    assert (Path(strata_module.__file__).parent / "py.typed").exists()
