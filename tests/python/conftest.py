# SPDX-License-Identifier: MIT
"""The strata Python package the tests use: the one pip installed into the
environment running pytest (scripts/bootstrap installs this tree into .venv),
never the build tree through PYTHONPATH. The installed package must come from
this source tree and match its Python files, or the tests fail: a stale or
foreign install would test other code. Under CI=true a missing package fails
the tests that need it instead of skipping them.
"""

import filecmp
import json
import os
import sysconfig
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from capability import require

REPO = Path(__file__).resolve().parents[2]
SOURCE_PACKAGE = REPO / "python" / "strata"
REINSTALL = "scripts/bootstrap (or: .venv/bin/pip install --no-build-isolation .)"


def installed_from() -> Path | None:
    """The source tree pip installed strata from (its direct_url.json), or None."""
    try:
        text = metadata.distribution("strata").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None
    url = json.loads(text or "{}").get("url", "")
    return Path(unquote(urlparse(url).path)).resolve() if url.startswith("file:") else None


@pytest.fixture(scope="session")
def strata_module():
    source = installed_from()
    require(source is not None, f"strata pip-installed into this environment: {REINSTALL}")
    if source != REPO:
        pytest.fail(f"the strata installed here comes from {source}, not from {REPO}: {REINSTALL}")
    import strata

    package = Path(strata.__file__).resolve().parent
    # The README's set-up puts .venv inside the tree: its site-packages is the
    # installed package; any other place under REPO is the source or a build tree.
    site = Path(sysconfig.get_paths()["purelib"]).resolve()
    if package.is_relative_to(REPO) and not package.is_relative_to(site):
        pytest.fail(
            f"strata was imported from {package}, inside the source tree, not from the installed package"
        )
    stale = [
        p.name
        for p in SOURCE_PACKAGE.iterdir()
        if p.is_file() and (not (package / p.name).is_file() or not filecmp.cmp(p, package / p.name, False))
    ]
    if stale:
        pytest.fail(
            f"the installed strata ({package}) is older than the source: {', '.join(stale)}: {REINSTALL}"
        )
    return strata


@pytest.fixture
def segment_name(request):
    """A segment name unique to this test and process."""
    return f"strata-pytest-{os.getpid()}-{request.node.name}"[:150].replace("[", "-").replace("]", "")
