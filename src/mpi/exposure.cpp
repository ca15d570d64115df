// SPDX-License-Identifier: MIT
#include "mpi/exposure.hpp"

#include <algorithm>
#include <array>
#include <climits>
#include <cstddef>

namespace strata::mpi {

namespace {

int create(void* base, MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm, MPI_Win* win, bool large) {
    if (large || disp_unit > INT_MAX) {
        return PMPI_Win_create_c(base, size, disp_unit, info, comm, win);
    }
    return PMPI_Win_create(base, size, static_cast<int>(disp_unit), info, comm, win);
}

/// Bytes from the base MPI uses for RMA into this rank (MPI_WIN_BASE) to the
/// base this rank gave. An empty window has nothing to address.
MPI_Aint shift_of(MPI_Win win, const void* base, MPI_Aint size) {
    void* used = nullptr;
    int flag = 0;
    if (size == 0 || PMPI_Win_get_attr(win, MPI_WIN_BASE, static_cast<void*>(&used), &flag) != MPI_SUCCESS ||
        flag == 0) {
        return 0;
    }
    return static_cast<const std::byte*>(base) - static_cast<const std::byte*>(used);
}

/// Every rank's shift and displacement unit, as Targets addressed in `mpi_unit`s
/// (0: each rank's own unit).
int gather(MPI_Comm comm, MPI_Aint shift, MPI_Aint disp_unit, MPI_Aint mpi_unit, std::vector<Target>& targets) {
    int size = 0;
    PMPI_Comm_size(comm, &size);
    std::vector<MPI_Aint> all(2 * static_cast<std::size_t>(size));
    const std::array<MPI_Aint, 2> mine{shift, disp_unit};
    if (const int rc = PMPI_Allgather(mine.data(), 2, MPI_AINT, all.data(), 2, MPI_AINT, comm); rc != MPI_SUCCESS) {
        return rc;
    }
    targets.resize(static_cast<std::size_t>(size));
    for (std::size_t i = 0; i < targets.size(); ++i) {
        targets[i] = {
            .offset = all[2 * i], .disp_unit = all[2 * i + 1], .mpi_unit = mpi_unit != 0 ? mpi_unit : all[2 * i + 1]};
    }
    return MPI_SUCCESS;
}

}  // namespace

int create_window(void* base, MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm, MPI_Win* win, bool large,
                  std::vector<Target>& targets) {
    targets.clear();
    if (const int rc = create(base, size, disp_unit, info, comm, win, large); rc != MPI_SUCCESS) {
        return rc;
    }
    MPI_Aint shift = shift_of(*win, base, size);
    // One reduction in the common case (no base moved); only then the shifts travel.
    int moved = shift != 0 ? 1 : 0;
    if (const int rc = PMPI_Allreduce(MPI_IN_PLACE, &moved, 1, MPI_INT, MPI_LOR, comm); rc != MPI_SUCCESS || !moved) {
        return rc;
    }
    if (const int rc = gather(comm, shift, disp_unit, 0, targets); rc != MPI_SUCCESS) {
        return rc;
    }
    if (std::ranges::all_of(targets, [](const Target& t) { return t.disp_unit > 0 && t.offset % t.disp_unit == 0; })) {
        detail::log().debug(
            "MPI_Win_create: rank {}: MPI exposes this rank's memory {} bytes before the base it "
            "gave; displacements are translated by whole units",
            comm_rank(comm), shift);
        return MPI_SUCCESS;
    }
    // Some rank's shift is not a whole number of its units: no displacement in
    // those units reaches its base, but every byte is one displacement away in
    // a window of unit 1, which every rank re-creates alike (they all gathered the same shifts).
    if (const int rc = PMPI_Win_free(win); rc != MPI_SUCCESS) {
        return rc;
    }
    if (const int rc = create(base, size, 1, info, comm, win, large); rc != MPI_SUCCESS) {
        return rc;
    }
    shift = shift_of(*win, base, size);
    detail::log().debug(
        "MPI_Win_create: rank {}: MPI exposes this rank's memory {} bytes before the base it gave; "
        "the window is re-made with displacement unit 1 and displacements are translated",
        comm_rank(comm), shift);
    return gather(comm, shift, disp_unit, 1, targets);
}

}  // namespace strata::mpi
