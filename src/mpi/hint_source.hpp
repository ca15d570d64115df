// Where a routine's hints come from: its MPI_Info, or the environment
// defaults (STRATA_MPI_WINDOW_HINTS) when the info names no storage hint.
#pragma once

#include <optional>
#include <string>

#include "mpi/common.hpp"
#include "mpi/hints.hpp"

namespace strata::mpi {

/// The hints a routine applies.
struct HintRequest {
    bool applies = false;  ///< false: pass the call straight to PMPI
    HintMap hints;
    std::optional<HintError> error;  ///< malformed environment defaults
};

/// For MPI_Win_allocate and MPI_Win_allocate_shared: the info's keys if it
/// has a storage key (alloc_type, storage_alloc_*); otherwise the
/// environment defaults, overlaid with the info's other known keys.
HintRequest window_hints(MPI_Info info);
/// For MPI_Alloc_mem: the info's keys only. Alloc_mem serves every kind of
/// buffer, not just windows, so environment defaults do not apply.
HintRequest allocation_hints(MPI_Info info);

/// The job id for %j from the environment (STRATA_JOB_ID, then the batch
/// systems' variables); empty when none is set.
const std::string& job_id_from_environment();

}  // namespace strata::mpi
