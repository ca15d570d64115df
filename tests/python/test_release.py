# SPDX-License-Identifier: MIT
"""The repository stands alone: one version everywhere, a license, and an SPDX line in every source file."""

import os
import re
import subprocess
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
STRATA = Path(os.environ.get("STRATA_BIN", REPO / "build/default/bin/strata"))

# The BPF programs must be GPL-compatible for the kernel helpers they call; the header
# they share with user space is dual-licensed so libstrata may include it (CONTRIBUTING.md).
LICENSE_OF = {
    "bpf/monitor_shared.h": "GPL-2.0 OR MIT",
    "bpf/monitor.bpf.c": "GPL-2.0",
    "bpf/doctor_probe.bpf.c": "GPL-2.0",
}
SOURCE_SUFFIXES = (".c", ".cc", ".cpp", ".h", ".hpp", ".hpp.in", ".py", ".pyi", ".sh")
SHEBANG = re.compile(r"^#!.*\b(ba|da)?sh\b|^#!.*python")


def cmake_version() -> str:
    return re.search(r"project\(strata VERSION ([0-9.]+)", (REPO / "CMakeLists.txt").read_text())[1]


def test_cmake_pyproject_the_command_and_the_changelog_agree_on_the_version():
    version = cmake_version()
    assert version == "0.1.0"
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    regex = pyproject["tool"]["scikit-build"]["metadata"]["version"]["regex"]
    assert re.search(regex, (REPO / "CMakeLists.txt").read_text())["value"] == version
    assert "version" in pyproject["project"]["dynamic"]
    printed = subprocess.run([STRATA, "--version"], capture_output=True, text=True, check=True).stdout
    assert printed.strip() == f"strata {version}"
    releases = re.findall(
        r"^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$", (REPO / "CHANGELOG.md").read_text(), re.M
    )
    assert releases and releases[0] == version, (
        f"CHANGELOG.md's latest release is {releases[:1]}, not {version}"
    )


def test_the_license_is_mit_in_the_file_and_the_package_metadata():
    assert (REPO / "LICENSE").read_text().startswith("MIT License\n")
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT"
    assert project["license-files"] == ["LICENSE"]


def tracked_sources() -> list[str]:
    files = subprocess.run(
        ["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    sources = []
    for name in files:
        path = REPO / name
        if name.startswith("docs/") or not path.is_file() or path.is_symlink():
            continue
        if name.endswith(SOURCE_SUFFIXES):
            sources.append(name)
        elif "." not in path.name:
            with path.open("rb") as f:
                if SHEBANG.match(f.readline().decode(errors="replace")):
                    sources.append(name)
    return sources


def spdx_of(path: Path) -> str | None:
    lines = path.read_text(errors="replace").splitlines()[:2]
    for line in lines:
        if match := re.search(r"SPDX-License-Identifier: ([^*]+?)\s*(?:\*/)?$", line):
            return match[1]
    return None


def test_every_tracked_source_file_names_its_license_in_its_first_lines():
    sources = tracked_sources()
    assert len(sources) > 300, f"only {len(sources)} sources found: is this a git checkout?"
    wrong = []
    for name in sources:
        found = spdx_of(REPO / name)
        expected = LICENSE_OF.get(name, "MIT")
        if found != expected:
            wrong.append(f"{name}: {found or 'no SPDX line'} (expected {expected})")
    assert not wrong, f"{len(wrong)} source files without the right SPDX line:\n" + "\n".join(wrong)
