// SPDX-License-Identifier: MIT
// STRATA_MPI_HANDLE: the MPI datatype of a strata::Handle (include/strata/mpi.h).
#include <mutex>

#include "mpi/common.hpp"
#include "strata/mpi.h"
#include "strata/shm/handle.hpp"

static_assert(sizeof(strata_handle) == sizeof(strata::Handle) && sizeof(strata_handle) == 32);

extern "C" __attribute__((visibility("default"))) MPI_Datatype strata_mpi_handle_type(void) {
    // Committed once per process; MPI frees it at MPI_Finalize.
    static std::once_flag once;
    static MPI_Datatype type = MPI_DATATYPE_NULL;
    std::call_once(once, [] {
        MPI_Datatype t = MPI_DATATYPE_NULL;
        if (PMPI_Type_contiguous(4, MPI_UINT64_T, &t) == MPI_SUCCESS && PMPI_Type_commit(&t) == MPI_SUCCESS) {
            type = t;
        }
    });
    return type;
}
