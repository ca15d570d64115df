#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `cmake --install` lays out the HPC library (cmake/StrataInstall.cmake): the
# programs, the libraries with their SONAMEs, headers, CMake package, pkg-config
# files, helpers, BPF objects, suites, docs, examples; every installed ELF file
# finds the installed libraries through its RPATH, none through the build tree.
# Usage: layout.sh <build dir> <source dir>
source "$(dirname "$0")/common.sh"
install_prefix

for f in bin/strata bin/strata-fsd; do
  [[ -x "$prefix/$f" ]] || fail "$f is not installed"
done
version=$(sed -n 's/^project(strata VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
major=${version%%.*}
[[ -n "$version" ]] || fail "no project version in $src/CMakeLists.txt"
for lib in strata strata-mpi strata-ocr strata-dsm; do
  real="$prefix/lib/lib$lib.so.$version"
  [[ -f "$real" && ! -L "$real" ]] || fail "lib/lib$lib.so.$version is not installed"
  soname=$(readelf -d "$real" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
  [[ "$soname" == "lib$lib.so.$major" ]] || fail "lib$lib: SONAME '$soname', expected lib$lib.so.$major"
  [[ "$(readlink "$prefix/lib/lib$lib.so.$major")" == "lib$lib.so.$version" ]] || fail "lib$lib.so.$major symlink"
  [[ "$(readlink "$prefix/lib/lib$lib.so")" == "lib$lib.so.$major" ]] || fail "lib$lib.so (the namelink)"
done
for f in include/strata/region.hpp include/strata/shm.hpp include/strata/version.hpp include/strata/mpi.h \
  include/strata/runtime.hpp include/ocr/ocr.h include/ocr/extensions/ocr-affinity.h \
  lib/cmake/strata/strataConfig.cmake lib/cmake/strata/strataConfigVersion.cmake \
  lib/cmake/strata/strataTargets.cmake lib/pkgconfig/strata.pc lib/pkgconfig/strata-mpi.pc \
  lib/pkgconfig/strata-ocr.pc share/strata/bench/lib.sh share/strata/bench/layout.sh \
  share/strata/bench/regions/report.py share/doc/strata/README.md share/doc/strata/install.md \
  share/doc/strata/examples/ocr/parallel_sum.c share/doc/strata/examples/mpi/storage_window.c \
  share/doc/strata/examples/CMakeLists.txt share/doc/strata/examples/Makefile; do
  [[ -f "$prefix/$f" ]] || fail "$f is not installed"
done
# A header whose library is not installed is not installed either.
[[ ! -e "$prefix/include/strata/workflow.hpp" ]] || fail "include/strata/workflow.hpp installed without its library"
for helper in strata-workflow-task strata-mpi-probe storage_window plain_mpi_windows ocr_fibonacci dsm_stencil \
  strata-bench-regions strata-bench-shm-handoff sw-mstream strata-umt-synthetic bench_external_harness; do
  [[ -x "$prefix/libexec/strata/$helper" ]] || fail "libexec/strata/$helper is not installed"
done
# The yielding poll the emulated-node storage-window runs preload, where the suite looks for it.
[[ -f "$prefix/libexec/strata/libstrata-yield-poll.so" ]] || fail "libexec/strata/libstrata-yield-poll.so is not installed"
for suite in regions shm_handoff shared-objects storage-windows umt external; do
  [[ -x "$prefix/share/strata/bench/$suite/run" ]] || fail "share/strata/bench/$suite/run is not installed"
done
[[ "$(readlink -f "$prefix/libexec/strata/strata")" == "$(readlink -f "$prefix/bin/strata")" ]] ||
  fail "libexec/strata/strata does not lead to bin/strata"
[[ "$(readlink "$prefix/libexec/strata/strata")" != /* ]] || fail "libexec/strata/strata is an absolute symlink"

# Bash completion, generated from the command: it completes subcommands and options.
completion=$prefix/share/bash-completion/completions/strata
[[ -f "$completion" ]] || fail "share/bash-completion/completions/strata is not installed"
completed=$(bash -c 'source "$1"; COMP_WORDS=(strata sh); COMP_CWORD=1; _strata; echo "${COMPREPLY[*]}";
  COMP_WORDS=(strata shm ls --j); COMP_CWORD=3; _strata; echo "${COMPREPLY[*]}"' _ "$completion") ||
  fail "sourcing $completion"
[[ "$completed" == $'shm\n--json' ]] || fail "the completion of 'strata sh' and 'strata shm ls --j': $completed"

# The BPF objects: ELF files for the BPF machine.
shopt -s nullglob
objects=("$prefix"/share/strata/bpf/*.bpf.o)
((${#objects[@]} >= 2)) || fail "share/strata/bpf has ${#objects[@]} BPF objects, expected monitor and doctor probe"
for o in "${objects[@]}"; do
  readelf -h "$o" | has "Machine:.*BPF" || fail "$o is not a BPF object"
done

# RPATHs: relative to the file, never the build tree; every library resolves, libstrata* inside the prefix.
elves=()
while IFS= read -r -d '' f; do
  if [[ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" == "177ELF" ]] && readelf -h "$f" | has "Machine:.*X86-64\|Machine:.*AArch64"; then
    elves+=("$f")
  fi
done < <(find "$prefix/bin" "$prefix/lib" "$prefix/libexec" -type f -print0)
((${#elves[@]} >= 20)) || fail "only ${#elves[@]} ELF files installed"
for f in "${elves[@]}"; do
  rpath=$(readelf -d "$f" | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]/\2/p')
  [[ "$rpath" != *"$build"* && "$rpath" != *"$src"* ]] || fail "$f: RPATH $rpath names the build tree"
  if [[ -n "$rpath" && "$rpath" != '$ORIGIN'* ]]; then
    fail "$f: RPATH $rpath is not relative to \$ORIGIN"
  fi
  deps=$(ldd "$f" 2>&1) || fail "ldd $f: $deps"
  ! grep -q "not found" <<< "$deps" || fail "$f: $(grep "not found" <<< "$deps")"
  while read -r name _ path _; do
    [[ "$name" == libstrata* ]] || continue
    [[ "$(readlink -f "$path")" == "$(readlink -f "$prefix")"/lib/* ]] ||
      fail "$f: $name resolves to $path, not into $prefix/lib"
  done <<< "$deps"
done
echo "checked ${#elves[@]} ELF files"

# pkg-config and the CMake package point into this prefix.
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
cflags=$(pkg-config --cflags strata-ocr)
# One word per flag: a path may itself hold "-I" (mktemp's random letters do).
ocr_include=
for flag in $cflags; do
  [[ "$flag" == -I*/ocr ]] && ocr_include=${flag#-I}
done
[[ -n "$ocr_include" && -f "$ocr_include/ocr.h" ]] || fail "pkg-config --cflags strata-ocr: $cflags"
[[ "$(pkg-config --variable=libdir strata)" -ef "$prefix/lib" ]] || fail "pkg-config libdir of strata"
[[ "$(pkg-config --modversion strata-mpi)" == "$version" ]] || fail "strata-mpi.pc version"
pkg-config --libs strata-mpi | has -- "-lstrata-mpi .*-lmpich" || fail "strata-mpi.pc does not link MPI after -lstrata-mpi"
echo "install layout: ok"
