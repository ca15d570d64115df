// SPDX-License-Identifier: MIT
// Pieces shared by the routines that create storage windows and allocations.
#pragma once

#include <optional>
#include <string>

#include "mpi/common.hpp"
#include "mpi/exposure.hpp"
#include "mpi/failure.hpp"
#include "mpi/hints.hpp"
#include "mpi/storage_part.hpp"

namespace strata::mpi {

/// Parses a request's hints; a failure names `routine` and `rank`.
std::optional<Failure> parse_request(const char* routine, int rank, const HintMap& hints,
                                     const std::optional<HintError>& source_error, WindowHints& out);

/// MPI_ERR_SIZE / MPI_ERR_DISP for arguments MPI itself would reject, checked
/// before any file is touched.
std::optional<Failure> check_arguments(const char* routine, int rank, MPI_Aint size, MPI_Aint disp_unit);

/// %j: the environment's job id, else `fallback` (agreed on by the caller).
std::string job_id(int fallback);

/// The file name of this rank: the template with %r %w %j expanded.
std::expected<std::string, Failure> file_name(const char* routine, int rank, const WindowHints& hints, int world_rank,
                                              unsigned index, const std::string& job, std::string_view kind);

/// Says where a window's or allocation's bytes went, at log level info
/// (STRATA_LOG=info or STRATA_VERBOSE=1): "<routine>: rank <r>: window 3:
/// 1048576 bytes: 0 in memory, 1048576 on storage in <path> (hints from
/// STRATA_MPI_WINDOW_HINTS)". `part` null: the bytes are MPI's memory, and
/// `source` says why ("no storage hints", "alloc_type=memory").
void report_placement(const char* routine, int rank, std::string_view what, std::size_t size, const StoragePart* part,
                      std::string_view source);
/// The source of a request's hints, for report_placement.
std::string_view hints_source(bool from_environment) noexcept;

PartSpec part_spec(const WindowHints& hints, const std::string& path, Factor memory_share);
ReleasePolicy release_policy(const WindowHints& hints);

/// The keys MPI_Win_get_info adds for a storage window: the hints as given,
/// the expanded file name, the bytes placed in memory and on storage, and
/// strata_not_applied for the hints accepted without effect (striping).
HintMap report(const WindowHints& hints, const std::string& path, const StoragePart* part);

}  // namespace strata::mpi
