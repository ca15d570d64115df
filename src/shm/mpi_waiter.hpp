// SPDX-License-Identifier: MIT
// The hook through which libstrata-mpi lends ports MPI waiting (sync=mpi).
//
// libstrata does not link MPI. libstrata-mpi registers these operations from
// a load-time constructor; a port opened with sync=mpi then waits for and is
// woken by zero-byte MPI messages instead of futexes (docs/shm.md "sync=mpi").
#pragma once

#include <cstddef>

namespace strata::shm_detail {

struct MpiWaiterOps {
    /// This process's rank in MPI_COMM_WORLD, or -1 with the cause in `why`
    /// (MPI not initialized, already finalized, ...).
    int (*rank)(char* why, std::size_t capacity) noexcept;
    /// The largest usable tag (MPI_TAG_UB of the ports' communicator).
    int (*tag_ub)() noexcept;
    /// Sends a zero-byte wake-up with `tag` to `rank`, without blocking.
    void (*notify)(int rank, int tag) noexcept;
    /// Waits up to `timeout_ns` for wake-ups with `tag`, receiving every one
    /// that is pending; true if at least one arrived.
    bool (*wait)(int tag, long timeout_ns) noexcept;
};

/// Registers (or with nullptr, removes) the MPI waiter; called by libstrata-mpi.
void set_mpi_waiter(const MpiWaiterOps* ops) noexcept;
/// The registered MPI waiter, or nullptr when the program lacks libstrata-mpi.
const MpiWaiterOps* mpi_waiter() noexcept;

}  // namespace strata::shm_detail
