# SPDX-License-Identifier: MIT
# Type stubs of strata.bench (python/strata/bench.py); tests/python/test_python_bench.py checks that they
# name every public function, class, method and parameter the module has.
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ResultsError", "Target", "Median", "Results", "search_path", "suites", "find", "load"]

RESULTS_FILE: str
TARGET_KEYS: tuple[str, ...]

class ResultsError(ValueError): ...

@dataclass(frozen=True)
class Target:
    name: str
    met: bool | None
    measured: str = ""
    id: str = ""
    experiment: str = ""
    paper: str = ""
    named: str = ""
    headline: bool = False
    superseded_by: str = ""

@dataclass(frozen=True)
class Median:
    config: dict[str, object]
    metric: str
    value: float
    repeats: int | None = None

@dataclass
class Results:
    suite: str
    path: Path
    command: str
    targets: list[Target]
    medians: list[Median]
    data: dict
    @property
    def met(self) -> list[Target]: ...
    @property
    def missed(self) -> list[Target]: ...
    def metrics(self) -> list[str]: ...
    def select(self, metric: str | None = None, **config: object) -> list[Median]: ...
    def median(self, metric: str, **config: object) -> float: ...

def search_path() -> list[Path]: ...
def suites(where: str | os.PathLike | None = None) -> list[str]: ...
def find(suite: str, where: str | os.PathLike | None = None) -> Path: ...
def load(suite: str, where: str | os.PathLike | None = None) -> Results: ...
