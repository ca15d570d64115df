// SPDX-License-Identifier: MIT
// The sections of `strata demo`, one per layer, in the order they run.
// A layer adds its section here, in its own file, and one call in demo.cpp.
#pragma once

#include <filesystem>

#include "tour.hpp"

namespace strata::cli {

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
