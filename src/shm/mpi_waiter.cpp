// SPDX-License-Identifier: MIT
// The registered MPI waiter of sync=mpi ports (shm/mpi_waiter.hpp).
#include "shm/mpi_waiter.hpp"

#include <atomic>

namespace strata::shm_detail {
namespace {
std::atomic<const MpiWaiterOps*> g_ops{nullptr};
}  // namespace

void set_mpi_waiter(const MpiWaiterOps* ops) noexcept {
    g_ops.store(ops, std::memory_order_release);
}

const MpiWaiterOps* mpi_waiter() noexcept {
    return g_ops.load(std::memory_order_acquire);
}

}  // namespace strata::shm_detail
