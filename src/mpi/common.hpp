// SPDX-License-Identifier: MIT
// Shared by every file of libstrata-mpi. The library is built with hidden
// visibility so that only the MPI_ entry points it overrides are exported;
// mpi.h is included with default visibility so that our definitions of its
// functions are the ones the dynamic linker finds before libmpi's.
#pragma once

#pragma GCC visibility push(default)
#include <mpi.h>
#pragma GCC visibility pop

#include <exception>
#include <new>
#include <string>

#include "core/log.hpp"

namespace strata::mpi {

/// The rank of this process in `comm` (0 if MPI cannot tell, which only
/// happens on an invalid communicator that the PMPI call reports anyway).
int comm_rank(MPI_Comm comm) noexcept;

/// One MPI_Win_allocate or MPI_Win_allocate_shared call (or its _c form), as
/// the allocation steps pass it on.
struct WindowRequest {
    const char* routine = nullptr;  ///< the MPI_ routine called, for messages
    MPI_Aint size = 0;
    MPI_Aint disp_unit = 1;
    MPI_Info info = MPI_INFO_NULL;
    MPI_Comm comm = MPI_COMM_NULL;
    void* baseptr = nullptr;
    MPI_Win* win = nullptr;
    bool large = false;  ///< the _c form: disp_unit is an MPI_Aint
};
/// The host name, for error messages that must say where a rank failed.
const std::string& host_name();

/// Runs an interposed routine's body; no C++ exception may cross into the
/// MPI program. Only allocation can throw here.
template <class Body>
int guarded(const char* routine, Body&& body) noexcept {
    try {
        return body();
    } catch (const std::bad_alloc&) {
        detail::log().error("{}: out of memory", routine);
        return MPI_ERR_NO_MEM;
    } catch (const std::exception& e) {
        detail::log().error("{}: {}", routine, e.what());
        return MPI_ERR_INTERN;
    } catch (...) {
        return MPI_ERR_INTERN;
    }
}

}  // namespace strata::mpi
