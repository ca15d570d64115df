// SPDX-License-Identifier: MIT
// Where a routine's hints come from: its MPI_Info, or the environment
// defaults (STRATA_MPI_WINDOW_HINTS, within STRATA_MPI_WINDOW_HINTS_SCOPE)
// when the info names no storage hint.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "mpi/common.hpp"
#include "mpi/hints.hpp"

namespace strata::mpi {

/// The routines environment defaults can apply to (the entries of
/// STRATA_MPI_WINDOW_HINTS_SCOPE).
enum class Routine { win_allocate, win_allocate_shared, alloc_mem };

/// The scope entry of a routine ("win_allocate", ...), and the %k value of
/// the allocations it makes ("win", "shm", "mem").
std::string_view scope_name(Routine routine) noexcept;
std::string_view kind_name(Routine routine) noexcept;

/// The hints a routine applies.
struct HintRequest {
    bool applies = false;           ///< false: pass the call straight to PMPI
    bool from_environment = false;  ///< the hints are STRATA_MPI_WINDOW_HINTS (overlaid with the info)
    HintMap hints;
    std::optional<HintError> error;  ///< malformed environment defaults or scope
};

/// The info's keys if it has a storage key (alloc_type, storage_alloc_*);
/// otherwise the environment defaults, if their scope covers `routine` (and,
/// for MPI_Alloc_mem, `size`), overlaid with the info's other known keys.
HintRequest request_hints(Routine routine, MPI_Info info, std::size_t size = 0);

/// The job id for %j from the environment (STRATA_JOB_ID, then the batch
/// systems' variables); empty when none is set.
const std::string& job_id_from_environment();

}  // namespace strata::mpi
