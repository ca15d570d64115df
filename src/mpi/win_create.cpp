// SPDX-License-Identifier: MIT
// MPI_Win_create over memory from MPI_Alloc_mem: the most common pattern of
// existing RMA codes (MPI_Alloc_mem, then MPI_Win_create on it). When the
// memory is a storage allocation (MPI_Info hints, or STRATA_MPI_WINDOW_HINTS
// within its scope), the window is a storage window: MPI_Win_sync makes the
// exposed range durable and MPI_Win_get_info reports the placement. The
// memory stays the allocation's: MPI_Win_free leaves it mapped and
// MPI_Free_mem writes it back and releases it. Other windows go to MPI
// unchanged (the program owns that memory) — except that, like every window
// made here, one whose memory MPI exposes at another base is translated
// (exposure.hpp): a window over memory another window also exposes.
#include <algorithm>

#include "mpi/registry.hpp"
#include "mpi/setup.hpp"

namespace strata::mpi {

namespace {

int create(const char* routine, void* base, MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm,
           MPI_Win* win, bool large) {
    std::vector<Target> targets;
    if (const int rc = create_window(base, size, disp_unit, info, comm, win, large, targets); rc != MPI_SUCCESS) {
        return rc;
    }
    auto record = make_record(MPI_WIN_FLAVOR_CREATE, comm_rank(comm));
    if (!targets.empty()) {
        record->translate(std::move(targets), base, size, disp_unit);
    }
    const auto length = static_cast<std::size_t>(std::max<MPI_Aint>(size, 0));
    auto allocation = length > 0 ? Registry::instance().allocation_holding(base, length) : nullptr;
    if (!allocation) {
        if (length > 0) {
            report_placement(routine, record->rank, "window", length, nullptr,
                             "the program's own memory, not a storage MPI_Alloc_mem allocation");
        }
        if (record->translated) {
            Registry::instance().add_window(*win, std::move(record));
        }
        return MPI_SUCCESS;
    }
    const auto offset = static_cast<std::size_t>(static_cast<std::byte*>(base) - allocation->part->data());
    record->reported = allocation->reported;
    record->attach({.part = allocation->part, .offset = offset, .length = length, .base = base});
    report_placement(routine, record->rank, "window over allocation " + std::to_string(allocation->index), length,
                     allocation->part.get(), "a storage MPI_Alloc_mem allocation");
    Registry::instance().add_window(*win, std::move(record));
    return MPI_SUCCESS;
}

}  // namespace

}  // namespace strata::mpi

using strata::mpi::guarded;

extern "C" int MPI_Win_create(void* base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, MPI_Win* win) {
    return guarded("MPI_Win_create", [&] {
        return strata::mpi::create("MPI_Win_create", base, size, disp_unit, info, comm, win, false);
    });
}

extern "C" int MPI_Win_create_c(void* base, MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm,
                                MPI_Win* win) {
    return guarded("MPI_Win_create_c", [&] {
        return strata::mpi::create("MPI_Win_create_c", base, size, disp_unit, info, comm, win, true);
    });
}
