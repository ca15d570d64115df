"""Finds the strata Python package built by CMake (build/<preset>/python/strata).

$STRATA_BIN (the strata binary, set by scripts/test) names the build: the
package is in <build>/python. Otherwise build/default/python. Under CI=true a
missing package fails the tests that need it instead of skipping them.
"""

import os
import sys
from pathlib import Path

import pytest
from capability import require

REPO = Path(__file__).resolve().parents[2]


def _package_dir() -> Path:
    if "STRATA_BIN" in os.environ:
        return Path(os.environ["STRATA_BIN"]).resolve().parent.parent / "python"
    return REPO / "build" / "default" / "python"


PYTHON_DIR = _package_dir()
if PYTHON_DIR.is_dir() and str(PYTHON_DIR) not in sys.path:
    sys.path.insert(0, str(PYTHON_DIR))
    # Child processes (multiprocessing, dask workers) find it too.
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PYTHON_DIR), os.environ.get("PYTHONPATH")]))


@pytest.fixture(scope="session")
def strata_module():
    try:
        import strata
    except ImportError as e:
        require(False, f"the strata Python package built in {PYTHON_DIR}: {e}")
    return strata


@pytest.fixture
def segment_name(request):
    """A segment name unique to this test and process."""
    return f"strata-pytest-{os.getpid()}-{request.node.name}"[:150].replace("[", "-").replace("]", "")
