# SPDX-License-Identifier: MIT
"""`strata shm gc` removes the storage data-block directories of OCR runs that
died (docs/runtime.md, "Data blocks on storage"), and never one of a live run,
of another user, or a link. Runs the built binary as a user would."""

import json
import os
import subprocess
import sys
from pathlib import Path

from capability import require

REPO = Path(__file__).resolve().parents[2]
STRATA_BIN = Path(os.environ.get("STRATA_BIN", REPO / "build" / "default" / "bin" / "strata"))


def dead_pid() -> int:
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    return int(child.stdout)


def run_dir(base: Path, pid: int, suffix: str) -> Path:
    path = base / f"strata-ocr-{pid}-{suffix}"
    path.mkdir(mode=0o700)
    (path / "0.db").write_bytes(b"block")
    return path


def test_gc_removes_a_dead_run_s_directory_and_keeps_live_foreign_and_linked_ones(tmp_path):
    require(STRATA_BIN.exists(), f"{STRATA_BIN} (build it, or set STRATA_BIN)")
    base = tmp_path / "db"
    base.mkdir()
    dead = run_dir(base, dead_pid(), "Ab12Cd")
    live = run_dir(base, os.getpid(), "Ef34Gh")
    target = run_dir(tmp_path, dead_pid(), "Ij56Kl")
    link = base / f"strata-ocr-{dead_pid()}-Mn78Op"
    link.symlink_to(target)
    foreign = None
    if os.geteuid() == 0:
        foreign = run_dir(base, dead_pid(), "Qr90St")
        os.chown(foreign, 65534, 65534)
    segments = tmp_path / "shm"
    segments.mkdir()

    result = subprocess.run(
        [str(STRATA_BIN), "shm", "gc", "--dir", str(segments), "--ocr-db-dir", str(base), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["ocr_db_dir"] == str(base)
    assert report["ocr_db_dirs_removed"] == [str(dead)]
    assert not dead.exists()
    assert (live / "0.db").exists()
    assert link.is_symlink() and (target / "0.db").exists()
    if foreign is not None:
        assert (foreign / "0.db").exists()


def test_gc_text_output_counts_the_removed_directories(tmp_path):
    require(STRATA_BIN.exists(), f"{STRATA_BIN} (build it, or set STRATA_BIN)")
    base = tmp_path / "db"
    base.mkdir()
    dead = run_dir(base, dead_pid(), "Uv12Wx")
    segments = tmp_path / "shm"
    segments.mkdir()
    result = subprocess.run(
        [str(STRATA_BIN), "shm", "gc", "--dir", str(segments), "--ocr-db-dir", str(base)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert f"removed {dead} (storage data blocks of an OCR run that died)" in result.stdout
    assert result.stdout.rstrip().endswith(f"1 OCR data-block directory from {base}")
