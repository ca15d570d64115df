// SPDX-License-Identifier: MIT
// Where MPI lets RMA land in a window that libstrata-mpi creates or passes
// through with PMPI_Win_create, and the displacement translation that keeps
// it on the bytes the program meant.
//
// MPICH 4.0.2 (ch4:ucx) does not always expose a rank's memory at the base
// the rank gave: it registers [base, base + size) with UCX and then takes the
// window's base from the registration (ucp_mem_query), and UCX 1.13 hands
// back a registration that starts earlier — rounded down to 16 bytes, or an
// earlier registration that already covers the range (the memory of another
// window, a shared storage window's whole file among them). MPI_WIN_BASE then
// reports that earlier address and every RMA call lands that many bytes
// early, silently. create_window() finds such a shift on any rank and makes
// the window translated, so every window over the same memory addresses the
// same bytes.
#pragma once

#include <vector>

#include "mpi/common.hpp"

namespace strata::mpi {

/// How RMA into one rank of a translated window is given to MPI: MPI
/// computes MPI's base + disp × mpi_unit; the program means the byte `offset`
/// past MPI's base + disp × disp_unit. Thus MPI must be given
/// (offset + disp × disp_unit) / mpi_unit, a whole number by construction.
struct Target {
    MPI_Aint offset = 0;     ///< the program's base of that rank minus MPI's, in bytes
    MPI_Aint disp_unit = 1;  ///< the program's displacement unit on that rank
    MPI_Aint mpi_unit = 1;   ///< the displacement unit of MPI's window on that rank

    [[nodiscard]] MPI_Aint displacement(MPI_Aint disp) const noexcept { return (offset + disp * disp_unit) / mpi_unit; }
};

/// PMPI_Win_create (or PMPI_Win_create_c, as the caller's entry point was),
/// then a check that MPI exposes every rank's memory at the base that rank
/// gave. Collective over `comm`: one MPI_Allreduce, plus an MPI_Allgather of
/// the shifts if any rank's base moved. `targets` is then one Target per rank
/// of the window (empty: MPI addresses every rank as asked, nothing to
/// translate). A shift that is not a whole number of that rank's units makes
/// every rank re-create MPI's window with displacement unit 1.
int create_window(void* base, MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm, MPI_Win* win, bool large,
                  std::vector<Target>& targets);

}  // namespace strata::mpi
