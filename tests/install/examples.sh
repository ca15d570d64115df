#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The installed examples build outside the source tree against the installed
# prefix, through find_package(strata) and through pkg-config, and run: an
# unmodified OCR C program (parallel_sum), an MPI program with storage
# windows (storage_window, linked with libstrata-mpi, and the same source
# without strata under LD_PRELOAD of the installed libstrata-mpi) and a C++
# program of the region API (combined_region), a C++ MPI program of the DSM
# (dsm_stencil), the flagship's OCR program with its C++ part (flagship_heat, with ffmpeg as an
# external task); a C-only CMake project gets strata::ocr.
# Usage: examples.sh <build dir> <source dir> <mpiexec>
source "$(dirname "$0")/common.sh"
install_prefix
mpiexec=$3

cp -r "$prefix/share/doc/strata/examples" "$tmp/examples"

# parallel_sum CHUNKS COUNT: the sum of 1..CHUNKS*COUNT, checked here too.
check_sum() {
  local output n
  output=$("$@") || fail "$* exited with $?: $output"
  n=$((${*: -2:1} * ${*: -1}))
  grep -q "sum of 1..$n over ${*: -2:1} EDTs = $((n * (n + 1) / 2)) " <<< "$output" || fail "$*: $output"
  echo "$output"
}
# storage_window DIR run twice on 2 ranks: each run adds 0+1 to the counters kept in DIR/counters-0.dat.
check_storage_window() {
  local dir=$1 output
  shift
  mkdir -p "$dir"
  output=$("$@" "$dir" 2>&1) || fail "$* $dir: $output"
  grep -q "counters went from 0 to 1" <<< "$output" || fail "first run of $*: $output"
  output=$("$@" "$dir" 2>&1) || fail "$* $dir: $output"
  grep -q "counters went from 1 to 2" <<< "$output" || fail "second run of $* (not continued from the file): $output"
  [[ -s "$dir/counters-0.dat" ]] || fail "$dir/counters-0.dat was not written"
  echo "$output"
}

echo "== find_package(strata) (examples/CMakeLists.txt)"
run cmake -S "$tmp/examples" -B "$tmp/cmake-build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release > "$tmp/cmake.log" 2>&1 || { cat "$tmp/cmake.log"; fail "configure the examples"; }
grep -q "strata_DIR:PATH=$prefix/lib/cmake/strata" "$tmp/cmake-build/CMakeCache.txt" || fail "strata not found in $prefix"
run cmake --build "$tmp/cmake-build" > "$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; fail "build the examples"; }
check_sum "$tmp/cmake-build/parallel_sum" 8 1000
check_storage_window "$tmp/w-cmake" "$mpiexec" -n 2 "$tmp/cmake-build/storage_window"
run "$tmp/cmake-build/combined_region" /var/tmp | has "verified in the file" || fail "combined_region (CMake)"
# check_stencil BINARY [mpiexec options]: 1 server and 3 clients, every cell matches the serial stencil.
check_stencil() {
  local output
  output=$("$mpiexec" -n 4 "${@:2}" "$1" 1 64 5 2>&1) || fail "dsm_stencil $1: $output"
  has ": 0 of 192 cells differ" <<< "$output" || fail "dsm_stencil $1: $output"
  echo "$output"
}
check_stencil "$tmp/cmake-build/dsm_stencil"
# check_heat BINARY DIR: the flagship's OCR program on one rank: its field, checkpoints and ffmpeg's video.
check_heat() {
  local output
  mkdir -p "$2"
  output=$("$prefix/bin/strata" ocr --external-config "$tmp/examples/flagship/flagship.toml" "$1" 32 2 10 5 5 "$2" 2>&1) ||
    fail "flagship_heat $1: $output"
  has "heat: video $2/heat.mp4" <<< "$output" || fail "flagship_heat $1: $output"
  [[ -s "$2/field.bin" && -s "$2/ckpt/rank-0.win" ]] || fail "flagship_heat $1: no field.bin or checkpoint window in $2"
  echo "$output"
}
check_heat "$tmp/cmake-build/flagship_heat" "$tmp/heat-cmake"

echo "== find_package(strata) from a project that enables only C"
mkdir -p "$tmp/c-only"
cp "$tmp/examples/ocr/parallel_sum.c" "$tmp/c-only/"
cat > "$tmp/c-only/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(c_only LANGUAGES C)
find_package(strata CONFIG REQUIRED)
add_executable(parallel_sum parallel_sum.c)
target_link_libraries(parallel_sum PRIVATE strata::ocr)
CMAKE
run cmake -S "$tmp/c-only" -B "$tmp/c-only/build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" > "$tmp/c-only.log" 2>&1 &&
  cmake --build "$tmp/c-only/build" >> "$tmp/c-only.log" 2>&1 || { cat "$tmp/c-only.log"; fail "the C-only project"; }
check_sum "$tmp/c-only/build/parallel_sum" 2 50

echo "== pkg-config (examples/Makefile)"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
mkdir -p "$tmp/pc-build"
run make -C "$tmp/examples" O="$tmp/pc-build" > "$tmp/make.log" 2>&1 || { cat "$tmp/make.log"; fail "make the examples"; }
# Built without an RPATH: the installed libraries are found as users find them.
LD_LIBRARY_PATH="$prefix/lib" check_sum "$tmp/pc-build/parallel_sum" 4 250
LD_LIBRARY_PATH="$prefix/lib" check_storage_window "$tmp/w-pc" "$mpiexec" -n 2 -genv LD_LIBRARY_PATH "$prefix/lib" \
  "$tmp/pc-build/storage_window"
LD_LIBRARY_PATH="$prefix/lib" run "$tmp/pc-build/combined_region" /var/tmp | has "verified in the file" ||
  fail "combined_region (pkg-config)"
LD_LIBRARY_PATH="$prefix/lib" check_stencil "$tmp/pc-build/dsm_stencil" -genv LD_LIBRARY_PATH "$prefix/lib"
LD_LIBRARY_PATH="$prefix/lib" check_heat "$tmp/pc-build/flagship_heat" "$tmp/heat-pc"
# The one-line build of the issue: cc app.c $(pkg-config --cflags --libs strata-ocr).
# shellcheck disable=SC2046
run cc "$tmp/examples/ocr/parallel_sum.c" $(pkg-config --cflags --libs strata-ocr) -o "$tmp/one-line" ||
  fail "cc parallel_sum.c \$(pkg-config --cflags --libs strata-ocr)"
LD_LIBRARY_PATH="$prefix/lib" check_sum "$tmp/one-line" 3 10
# ... and through `strata ocr`, which sets the runtime's options.
LD_LIBRARY_PATH="$prefix/lib" check_sum "$prefix/bin/strata" ocr "$tmp/one-line" 5 20

echo "== LD_PRELOAD of the installed libstrata-mpi into a binary built without strata"
# shellcheck disable=SC2046
run mpicc "$tmp/examples/mpi/storage_window.c" $(pkg-config --cflags strata-mpi) -o "$tmp/plain" ||
  fail "mpicc storage_window.c without strata"
! readelf -d "$tmp/plain" | has "libstrata" || fail "the plain build links strata"
# Without strata the hints are ignored: memory windows, no file.
mkdir -p "$tmp/w-none"
"$mpiexec" -n 2 "$tmp/plain" "$tmp/w-none" > /dev/null 2>&1 || fail "the plain build without LD_PRELOAD"
[[ ! -e "$tmp/w-none/counters-0.dat" ]] || fail "a file appeared without libstrata-mpi"
check_storage_window "$tmp/w-preload" "$mpiexec" -n 2 -genv LD_PRELOAD "$prefix/lib/libstrata-mpi.so.0" "$tmp/plain"
echo "examples: ok"
