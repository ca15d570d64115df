// SPDX-License-Identifier: MIT
// The sections of `strata demo`, one per layer, in the order they run.
// A layer adds its section here, in its own file, and one call in demo.cpp.
#pragma once

#include <filesystem>

#include "tour.hpp"

namespace strata::cli {

/// The flagship's sizes: the small one runs first in every `strata demo`, a larger one alone
/// in `strata demo flagship`.
struct FlagshipSize {
    int n = 64;  ///< the grid's side
    int steps = 120;
    int k = 20;        ///< a checkpoint every k steps
    int m = 10;        ///< a frame every m steps
    int kill_at = 40;  ///< the job is SIGKILLed once this step's checkpoint is complete
};

/// The flagship workflow: every layer in one program, checked against a serial reference
/// (examples/flagship, docs/getting-started/flagship.md); its outputs and report go to `out`,
/// which is `kept` after the demo or not.
void tour_flagship(Tour& tour, const std::filesystem::path& out, const FlagshipSize& size, bool kept);

/// Regions: memory, shared, storage and combined (docs/regions.md).
void tour_regions(Tour& tour, const std::filesystem::path& dir);

/// MPI storage windows through libstrata-mpi, with mpiexec (docs/mpi-storage-windows.md).
void tour_mpi(Tour& tour, const std::filesystem::path& dir);

/// Blocking monitor: auto's choice, a blocked worker seen, preemption ignored (docs/monitor.md).
void tour_monitor(Tour& tour);
/// Task runtime and OCR programs (docs/runtime.md).
void tour_runtime(Tour& tour);
/// Distributed OCR: unmodified OCR programs on two ranks through `strata ocr -n 2` (docs/runtime.md).
void tour_ocr_dist(Tour& tour, const std::filesystem::path& dir);
/// Synthetic workflows through `strata run`: threads in-process, processes with mpiexec (docs/workflow.md).
void tour_workflow(Tour& tour, const std::filesystem::path& dir);

/// External programs as OCR tasks reading a block through each exposure (docs/external.md).
void tour_external(Tour& tour, const std::filesystem::path& dir);

/// Shared objects: segments, containers, handles and ports between processes (docs/shm.md).
void tour_shm(Tour& tour, const std::filesystem::path& dir);

/// Distributed shared memory: an example stencil over mpiexec (docs/dsm.md).
void tour_dsm(Tour& tour);

/// Paper 003's video pipeline with strata-video: MPI, the DSM, ZeroMQ on emulated nodes (docs/video.md).
void tour_video(Tour& tour, const std::filesystem::path& dir);

}  // namespace strata::cli
