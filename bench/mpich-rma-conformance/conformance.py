# SPDX-License-Identifier: MIT
"""MPICH's own RMA tests (test/mpi/rma) plain and under libstrata-mpi.

Builds the programs of the release's rma/Makefile.am with mpicc against the
installed MPICH (their util/mtest*.c and include/ beside them), then runs every
entry of rma/testlist.in in each mode:

  plain     MPICH alone
  storage   LD_PRELOAD=libstrata-mpi.so, STRATA_MPI_WINDOW_HINTS=
            alloc_type=storage,storage_alloc_filename=<run dir>/%k-%r-%w.dat,
            STRATA_MPI_WINDOW_HINTS_SCOPE=all
  combined  the same with storage_alloc_factor=0.5
  remote    storage with storage_alloc_remote_sync=true (not run unless --modes
            names it: MPI_Init then asks for MPI_THREAD_MULTIPLE, and every
            MPI_Win_sync of an MPI_Win_allocate window syncs its targets)

A run passes as MPICH's runtests judges it: exit status 0, a "No Errors" line,
and no other output (stdout and stderr together) -- except the lines strata's
own log writes ("strata: ..."), which are counted and reported, not judged.
Nothing is fetched: the tests come from --source (scripts/bootstrap unpacks
them from Debian's MPICH source package).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODES = ("plain", "storage", "combined")
EXTRA_MODES = ("remote",)
DEFAULT_TIME_LIMIT = 180  # runtests' default, seconds
# What MPICH's configure would find on Debian 12 for these tests; they only
# read these (threads come from mtest_single.c: none of the rma tests uses them).
CONFIG_HEADER = """\
#define HAVE_MPI_WIN_CREATE 1
#define HAVE_STDARG_H 1
#define HAVE_STDLIB_H 1
#define HAVE_STRING_H 1
#define HAVE_UNISTD_H 1
#define HAVE_SYS_TIME_H 1
#define HAVE_SYS_RESOURCE_H 1
#define HAVE_GETRUSAGE 1
#define HAVE_LONG_DOUBLE 1
#define HAVE_LONG_LONG 1
#define POINTERINT_t long
#define THREAD_PACKAGE_NAME THREAD_PACKAGE_POSIX
"""
UTIL = ("mtest.c", "mtest_common.c", "mtest_single.c")
NO_ERRORS = re.compile(r"^\s*No [Ee]rrors\s*$")
TEST_PASSED = re.compile(r"^\s*Test Passed\s*$")
STRATA_LINE = re.compile(r"^strata: ")


@dataclass
class Entry:
    """One line of testlist.in."""

    name: str
    np: int
    args: list[str] = field(default_factory=list)
    time_limit: int = DEFAULT_TIME_LIMIT
    excluded: str = ""  # why it is not run (empty: it runs)

    @property
    def key(self) -> str:
        return " ".join([self.name, str(self.np), *self.args])


@dataclass
class Program:
    """How rma/Makefile.am builds one program."""

    sources: list[str]
    cppflags: list[str]
    libs: list[str]


def parse_testlist(path: Path) -> list[Entry]:
    entries = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        excluded = ""
        if line.startswith("@largetest@"):
            # configure comments these out unless --enable-large-tests
            line = line.removeprefix("@largetest@")
            excluded = "large test: not in MPICH's default list (configure --enable-large-tests)"
        words = line.split()
        entry = Entry(words[0], int(words[1]), excluded=excluded)
        for option in words[2:]:
            key, _, value = option.partition("=")
            if key == "arg":
                entry.args.append(value)
            elif key == "timeLimit":
                entry.time_limit = int(value)
            else:
                raise SystemExit(f"{path}: {entry.name}: option {option!r} is not handled by this harness")
        entries.append(entry)
    return entries


def parse_makefile(path: Path) -> dict[str, Program]:
    text = path.read_text().replace("\\\n", " ")
    assignments: dict[str, list[str]] = {}
    for line in text.splitlines():
        match = re.match(r"^([A-Za-z0-9_]+)\s*\+?=\s*(.*)$", line)
        if match:
            assignments.setdefault(match.group(1), []).extend(match.group(2).split())
    programs = {}
    for name in assignments.get("noinst_PROGRAMS", []):
        sources = assignments.get(f"{name}_SOURCES", [f"{name}.c"])
        flags = [f for f in assignments.get(f"{name}_CPPFLAGS", []) if not f.startswith("$(")]
        libs = [f for f in assignments.get(f"{name}_LDADD", []) if not f.startswith("$(")]
        programs[name] = Program([s for s in sources if s.endswith(".c")], flags, libs)
    return programs


def compile_util(source: Path, build: Path) -> list[Path]:
    build.mkdir(parents=True, exist_ok=True)
    (build / "mpitestconf.h").write_text(CONFIG_HEADER)
    objects = []
    for name in UTIL:
        obj = build / (Path(name).stem + ".o")
        command = [
            "mpicc",
            "-O2",
            "-w",
            f"-I{build}",
            f"-I{source / 'include'}",
            "-c",
            str(source / "util" / name),
        ]
        subprocess.run([*command, "-o", str(obj)], check=True)
        objects.append(obj)
    return objects


def build_program(name: str, program: Program, source: Path, build: Path, util: list[Path]) -> str:
    """Builds one program; returns "" or the compiler's message."""
    command = ["mpicc", "-O2", "-w", f"-I{build}", f"-I{source / 'include'}", *program.cppflags]
    command += [str(source / "rma" / s) for s in program.sources] + [str(u) for u in util]
    command += ["-o", str(build / name), *program.libs, "-lm"]
    done = subprocess.run(command, capture_output=True, text=True)
    return "" if done.returncode == 0 else (done.stdout + done.stderr).strip()


def build_all(
    names: list[str], programs: dict[str, Program], source: Path, build: Path, jobs: int
) -> dict[str, str]:
    util = compile_util(source, build)
    failures = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {
            n: pool.submit(build_program, n, programs[n], source, build, util) for n in names if n in programs
        }
        for name, future in futures.items():
            if message := future.result():
                failures[name] = message
    for name in names:
        if name not in programs:
            failures[name] = "not a program of rma/Makefile.am"
    (build / "build-failures.json").write_text(json.dumps(failures, indent=1, sort_keys=True))
    return failures


def mode_environment(mode: str, run_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_MPI_") and k != "LD_PRELOAD"}
    env.pop("STRATA_LOG", None)
    if mode != "plain":
        hints = f"alloc_type=storage,storage_alloc_filename={run_dir}/%k-%r-%w.dat"
        if mode == "combined":
            hints += ",storage_alloc_factor=0.5"
        if mode == "remote":
            hints += ",storage_alloc_remote_sync=true"
        env["STRATA_MPI_WINDOW_HINTS"] = hints
        env["STRATA_MPI_WINDOW_HINTS_SCOPE"] = "all"
    return env


def judge(output: str, returncode: int, timed_out: bool) -> tuple[str, str]:
    """(outcome, why) the way runtests judges a run."""
    if timed_out:
        return "timeout", ""
    unexpected = [
        line
        for line in output.splitlines()
        if line.strip()
        and not NO_ERRORS.match(line)
        and not TEST_PASSED.match(line)
        and not STRATA_LINE.match(line)
    ]
    if not any(NO_ERRORS.match(line) for line in output.splitlines()):
        return "fail", f"exit {returncode}, no 'No Errors'" + (
            f": {unexpected[0][:200]}" if unexpected else ""
        )
    if unexpected:
        return "fail", f"unexpected output: {unexpected[0][:200]}"
    if returncode != 0:
        return "fail", f"exit {returncode}"
    return "pass", ""


running: list = []  # [process group, run directory] of the run under way


def stop(signum: int, _frame) -> None:
    """SIGTERM/SIGINT (a CTest timeout, ^C): end the run under way, by its group id, and remove its directory."""
    if running:
        try:
            os.killpg(running[0], signal.SIGKILL)
        except ProcessLookupError:
            pass
        shutil.rmtree(running[1], ignore_errors=True)
    sys.exit(128 + signum)


def run_once(entry: Entry, mode: str, build: Path, library: Path, mpiexec: str, limit: int) -> dict:
    run_dir = Path(tempfile.mkdtemp(prefix=f"strata-mpich-rma-{entry.name}-", dir=build / "runs"))
    env = mode_environment(mode, run_dir)
    env["MPIEXEC_TIMEOUT"] = str(limit)  # hydra ends the job, as under runtests
    command = [mpiexec, "-n", str(entry.np)]
    if mode != "plain":
        command += ["-genv", "LD_PRELOAD", str(library)]
    command += [str(build / entry.name), *entry.args]
    start = time.monotonic()
    process = subprocess.Popen(
        command, cwd=run_dir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, process_group=0
    )
    running[:] = [process.pid, run_dir]
    try:
        raw, _ = process.communicate(timeout=limit + 30)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)  # the group this run started, by its id
        raw, _ = process.communicate()
        timed_out = True
    seconds = time.monotonic() - start
    output = raw.decode(errors="replace")
    timed_out = timed_out or "APPLICATION TIMED OUT" in output  # hydra's MPIEXEC_TIMEOUT
    outcome, why = judge(output, process.returncode, timed_out)
    files = sorted(p.name for p in run_dir.iterdir())
    shutil.rmtree(run_dir)
    running.clear()
    return {
        "outcome": outcome,
        "why": why,
        "exit": process.returncode,
        "seconds": round(seconds, 2),
        "storage_files": len([f for f in files if f.endswith(".dat")]),
        "strata_lines": sum(1 for line in output.splitlines() if STRATA_LINE.match(line)),
        "output": output,
    }


def select(entries: list[Entry], tests: str | None, subset: str | None) -> list[Entry]:
    names = None
    if subset:
        names = [n.strip() for n in (HERE / f"{subset}-subset.txt").read_text().splitlines() if n.strip()]
        names = [n for n in names if not n.startswith("#")]
    if tests:
        names = (
            [n for n in tests.split(",") if n]
            if names is None
            else [n for n in names if n in tests.split(",")]
        )
    if names is None:
        return entries
    unknown = sorted(set(names) - {e.name for e in entries})
    if unknown:
        raise SystemExit(f"--tests/--subset: not in rma/testlist.in: {', '.join(unknown)}")
    return [e for e in entries if e.name in names]


def machine() -> dict:
    mpich = subprocess.run(["mpichversion"], capture_output=True, text=True).stdout
    fields = dict(re.findall(r"^MPICH (Version|Device):\s*(\S+)", mpich, re.M))
    return {
        "kernel": platform.release(),
        "cores": os.cpu_count(),
        "mpich": fields.get("Version", "?"),
        "device": fields.get("Device", "?"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--source", type=Path, required=True, help="MPICH's test/mpi directory")
    parser.add_argument("--work", type=Path, required=True, help="where programs are built and run")
    parser.add_argument("--library", type=Path, required=True, help="libstrata-mpi.so")
    parser.add_argument("--mpiexec", default="mpiexec")
    parser.add_argument("--tests", help="comma list of test names (all entries of each)")
    parser.add_argument("--subset", help="NAME: the tests listed in NAME-subset.txt beside this script")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--timeout-cap", type=int, help="at most this many seconds per run")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel compiles")
    parser.add_argument("--build-only", action="store_true")
    parser.add_argument("--no-build", action="store_true", help="use the programs --work already holds")
    parser.add_argument("--results", type=Path, help="write results.json and raw/ here")
    parser.add_argument("--check", action="store_true", help="exit 1 unless every run passed")
    parser.add_argument("--resume", action="store_true", help="keep the entries --results already holds")
    options = parser.parse_args()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    modes = [m for m in options.modes.split(",") if m]
    if bad := [m for m in modes if m not in MODES + EXTRA_MODES]:
        raise SystemExit(f"--modes: unknown mode {bad[0]!r} (expected {', '.join(MODES + EXTRA_MODES)})")

    # Runs happen in directories of their own: every path must be absolute.
    options.source, options.library = options.source.resolve(), options.library.resolve()
    rma = options.source / "rma"
    entries = select(parse_testlist(rma / "testlist.in"), options.tests, options.subset)
    build = options.work.resolve()
    (build / "runs").mkdir(parents=True, exist_ok=True)
    names = sorted({e.name for e in entries if not e.excluded})
    if options.no_build:
        failures = json.loads((build / "build-failures.json").read_text())
    else:
        failures = build_all(names, parse_makefile(rma / "Makefile.am"), options.source, build, options.jobs)
    if options.build_only:
        print(f"built {len(names) - len(failures)} of {len(names)} programs in {build}")
        for name, message in sorted(failures.items()):
            print(f"  {name}: build failed: {message.splitlines()[0] if message else ''}")
        return 1 if options.check and failures else 0

    done = previous(options.results) if options.resume else {}
    results = []
    for entry in entries:
        if entry.key in done:
            results.append(done[entry.key])
            continue
        row = {"test": entry.key, "name": entry.name, "np": entry.np, "args": entry.args, "modes": {}}
        if entry.excluded or entry.name in failures:
            row["excluded"] = entry.excluded or f"build failed: {failures[entry.name].splitlines()[0]}"
            print(f"{entry.key:60} excluded: {row['excluded']}", flush=True)
            results.append(row)
            continue
        limit = min(entry.time_limit, options.timeout_cap or entry.time_limit)
        row["time_limit"] = limit
        for mode in modes:
            row["modes"][mode] = run_once(entry, mode, build, options.library, options.mpiexec, limit)
        summary = "  ".join(f"{m}={r['outcome']}({r['seconds']:.1f}s)" for m, r in row["modes"].items())
        print(f"{entry.key:60} {summary}", flush=True)
        for mode, result in row["modes"].items():
            if result["outcome"] != "pass" and (options.check or options.tests):
                print(
                    f"--- {entry.key} [{mode}]: {result['why']}\n{result['output'].rstrip()}\n---", flush=True
                )
        results.append(row)
        if options.results:  # after every entry: an interrupted run keeps what it did (--resume)
            write_results(options.results, results, modes, options.timeout_cap)

    if options.results:
        write_results(options.results, results, modes, options.timeout_cap)
    runs = [r for row in results for r in row["modes"].values()]
    failed = [r for r in runs if r["outcome"] != "pass"]
    print(f"{len(runs) - len(failed)} passed, {len(failed)} failed")
    return 1 if options.check and (failed or not runs) else 0


def raw_stem(test: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", test)


def previous(out: Path | None) -> dict[str, dict]:
    """The entries an earlier (interrupted) run wrote, by test key; rows marked pending (not run yet) are run."""
    if out is None or not (out / "results.json").exists():
        return {}
    rows = json.loads((out / "results.json").read_text())["tests"]
    return {row["test"]: row for row in rows if not row.get("pending")}


def write_results(out: Path, results: list[dict], modes: list[str], timeout_cap: int | None) -> None:
    raw = out / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    for row in results:
        for mode, result in row["modes"].items():
            output = result.pop("output", None)
            # Only what did not pass needs its output read: the tree keeps it small.
            if output is not None and result.get("outcome") != "pass":
                (raw / f"{raw_stem(row['test'])}.{mode}.txt").write_text(output)
    document = {
        "suite": "mpich-rma-conformance",
        "command": "bench/mpich-rma-conformance/run"
        + (f" --timeout-cap {timeout_cap}" if timeout_cap else ""),
        "targets": [],  # a conformance table: no performance target (bench/target_rows.py)
        "machine": machine(),
        "modes": modes,
        "timeout_cap": timeout_cap,
        "tests": results,
    }
    (out / "results.json").write_text(json.dumps(document, indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main())
