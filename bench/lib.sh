# SPDX-License-Identifier: MIT
# Sourced by every bench/<suite>/run: where the suite's scripts, the harness
# binaries, Python and the report go, in a source tree and in an installed
# prefix alike (docs/install.md). No function here starts any work.
#
#   strata_bench_init SUITE   sets, without touching the file system:
#     here     the suite's directory (report.py and the other scripts)
#     root     the source tree holding bench/ (empty when installed)
#     bin_dir  $STRATA_BIN_DIR, else <root>/build/default/bin in a source tree,
#              else <prefix>/libexec/strata (installed; `strata bench` sets it)
#     python   $STRATA_VENV/bin/python, else <root>/.venv/bin/python in a source
#              tree, else python3 from PATH
#     out      the default report directory: <root>/docs/benchmarks/SUITE in a
#              source tree, else ./strata-bench-SUITE
#   strata_bench_usage        prints the run script's leading comment (its --help)
#   strata_bench_unknown ARG  says ARG is not an option of the suite; exits 2
#   strata_bench_value OPT N  exits 2 unless OPT has a value (N: arguments left)
#   strata_bench_need_python  exits 1 unless $python imports matplotlib
#   strata_bench_need BIN...  exits 1 unless every BIN is an executable in $bin_dir
#   strata_bench_remove_cgroup GROUP PARENT
#                             moves GROUP's processes (this script among them) back to
#                             PARENT, then removes GROUP
#   strata_bench_kill_cgroup GROUP
#                             kills GROUP's processes (ranks a timeout or a signal left
#                             there), then removes GROUP
#   strata_bench_progress STEP TOTAL TEXT...
#                             tells `strata bench` that step STEP of TOTAL (0: not
#                             counted) is starting, doing TEXT; on a terminal it shows
#                             that on its progress line (docs/cli.md#progress). Does
#                             nothing otherwise. bench/bench_progress.py is the same for Python.

strata_bench_lib_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"

strata_bench_init() {
  suite_name=$1
  here="$strata_bench_lib_dir/$suite_name"
  root=""
  if [[ -f "$strata_bench_lib_dir/../CMakeLists.txt" && -d "$strata_bench_lib_dir/../docs/benchmarks" ]]; then
    root="$(cd "$strata_bench_lib_dir/.." && pwd -P)"
  fi
  local installed_bin=""
  if [[ -f "$strata_bench_lib_dir/layout.sh" ]]; then
    # Written by cmake --install: where the harnesses are, relative to this directory.
    # shellcheck source=/dev/null
    source "$strata_bench_lib_dir/layout.sh"
    installed_bin="$strata_bench_lib_dir/$strata_bench_helper_dir"
  fi
  if [[ -n "${STRATA_BIN_DIR:-}" ]]; then
    bin_dir=$STRATA_BIN_DIR
  elif [[ -n "$root" ]]; then
    bin_dir="$root/build/default/bin"
  else
    bin_dir=$installed_bin
  fi
  if [[ -n "${STRATA_VENV:-}" ]]; then
    python="$STRATA_VENV/bin/python"
  elif [[ -n "$root" && -x "$root/.venv/bin/python" ]]; then
    python="$root/.venv/bin/python"
  else
    python="$(command -v python3 || echo python3)"
  fi
  if [[ -n "$root" ]]; then
    out="$root/docs/benchmarks/$suite_name"
  else
    out="$PWD/strata-bench-$suite_name"
  fi
}

strata_bench_usage() {
  local script=${BASH_SOURCE[1]}
  sed -n '3,/^[^#]/{/^#/!d;s/^# \{0,1\}//;p}' "$script"  # line 1: #!, line 2: SPDX
}

strata_bench_unknown() {
  echo "bench/$suite_name/run: unknown option '$1' (see --help)" >&2
  exit 2
}

strata_bench_value() {
  if (($2 < 2)); then
    echo "bench/$suite_name/run: $1 needs a value (see --help)" >&2
    exit 2
  fi
}

strata_bench_need_python() {
  if ! "$python" -c "import matplotlib, numpy" 2>/dev/null; then
    echo "bench/$suite_name/run: $python cannot import matplotlib and numpy, which the report needs;" >&2
    echo "  set STRATA_VENV to a Python environment that has them (scripts/bootstrap makes .venv)" >&2
    exit 1
  fi
}

strata_bench_need() {
  local exe
  for exe in "$@"; do
    if [[ ! -x "$bin_dir/$exe" ]]; then
      echo "bench/$suite_name/run: $bin_dir/$exe not found; build it first:" >&2
      echo "  cmake --preset default && cmake --build --preset default" >&2
      echo "  (or set STRATA_BIN_DIR to the directory of the harnesses)" >&2
      exit 1
    fi
  done
}

# Moves every process of cgroup $1 back to the root of its hierarchy $2, then
# removes it.
strata_bench_remove_cgroup() {
  local group=$1 parent=$2
  [[ -d "$group" ]] || return 0
  while read -r pid; do
    echo "$pid" > "$parent/cgroup.procs" 2>/dev/null || true
  done < "$group/cgroup.procs"
  rmdir "$group" 2>/dev/null || echo "$0: could not remove $group" >&2
}

# Ends every process of cgroup $1, by id, then removes it (a group keeps
# existing until its last process has exited).
strata_bench_kill_cgroup() {
  local group=$1 pids
  [[ -d "$group" ]] || return 0
  for _ in 1 2 3; do
    pids=$(cat "$group/cgroup.procs" 2>/dev/null) || break
    [[ -z "$pids" ]] && break
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
    sleep 0.5
  done
  for _ in $(seq 50); do rmdir "$group" 2>/dev/null && break; sleep 0.1; done
  [[ -d "$group" ]] && echo "$0: could not remove $group" >&2
  return 0
}

# `strata bench` on a terminal reads these lines from the pipe it names in
# STRATA_PROGRESS_FD (tools/strata/bench_watch.hpp); without it, nothing happens.
strata_bench_progress() {
  [[ -n "${STRATA_PROGRESS_FD:-}" ]] || return 0
  local step=$1 total=$2
  shift 2
  printf '%s %s %s\n' "$step" "$total" "$*" 2>/dev/null >&"$STRATA_PROGRESS_FD" || true
}
