// SPDX-License-Identifier: MIT
// MPI_Alloc_mem / MPI_Free_mem with storage hints, and MPI_Win_attach /
// MPI_Win_detach so that MPI_Win_sync on a dynamic window makes its attached
// storage durable.
//
// MPI_Alloc_mem is local, so its errors are raised on MPI_COMM_WORLD (MPI's
// rule for calls without a communicator, window or file) and there is no
// agreement; factor=auto uses this process's whole memory budget, and %j is
// the environment's job id or this process's pid.
#include <unistd.h>

#include "mpi/hint_source.hpp"
#include "mpi/registry.hpp"
#include "mpi/setup.hpp"

namespace strata::mpi {

namespace {

constexpr const char* alloc_routine = "MPI_Alloc_mem";

int window_rank(MPI_Win win) {
    MPI_Group group = MPI_GROUP_NULL;
    int rank = 0;
    if (PMPI_Win_get_group(win, &group) == MPI_SUCCESS) {
        PMPI_Group_rank(group, &rank);
        PMPI_Group_free(&group);
    }
    return rank;
}

int allocate_memory(MPI_Aint size, MPI_Info info, void* baseptr) {
    HintRequest request = request_hints(Routine::alloc_mem, info, size > 0 ? static_cast<std::size_t>(size) : 0);
    if (!request.applies) {
        const int rc = PMPI_Alloc_mem(size, info, baseptr);
        if (rc == MPI_SUCCESS && size > 0) {
            report_placement(alloc_routine, comm_rank(MPI_COMM_WORLD), "allocation", static_cast<std::size_t>(size),
                             nullptr, "no storage hints, or outside STRATA_MPI_WINDOW_HINTS_SCOPE");
        }
        return rc;
    }
    const int rank = comm_rank(MPI_COMM_WORLD);
    WindowHints hints;
    std::optional<Failure> failure = parse_request(alloc_routine, rank, request.hints, request.error, hints);
    if (!failure && size < 0) {
        failure = make_failure(MPI_ERR_SIZE, alloc_routine, rank, "size", std::to_string(size), "negative size");
    }
    if (failure) {
        return raise_on_comm(MPI_COMM_WORLD, *failure);
    }
    if (!hints.storage || size == 0) {
        return PMPI_Alloc_mem(size, info, baseptr);  // memory, or nothing to place on storage
    }
    const unsigned index = Registry::instance().next_index();
    auto path = file_name(alloc_routine, rank, hints, rank, index, job_id(static_cast<int>(::getpid())),
                          kind_name(Routine::alloc_mem));
    if (!path) {
        return raise_on_comm(MPI_COMM_WORLD, path.error());
    }
    auto part = StoragePart::create(static_cast<std::size_t>(size), part_spec(hints, *path, hints.memory_factor()),
                                    release_policy(hints));
    if (!part) {
        return raise_on_comm(MPI_COMM_WORLD, region_failure(alloc_routine, rank, part.error()));
    }
    auto allocation = std::make_shared<Allocation>(
        Allocation{.part = *part, .rank = rank, .index = index, .reported = report(hints, *path, part->get())});
    if (hints.sync == SyncMode::async) {
        flush_in_background(*part);
    }
    report_placement(alloc_routine, rank, "allocation " + std::to_string(index), static_cast<std::size_t>(size),
                     part->get(), hints_source(request.from_environment));
    Registry::instance().add_allocation((*part)->data(), std::move(allocation));
    *static_cast<void**>(baseptr) = (*part)->data();
    return MPI_SUCCESS;
}

int free_memory(void* base) {
    auto allocation = Registry::instance().take_allocation(base);
    if (!allocation) {
        return PMPI_Free_mem(base);
    }
    if (auto released = allocation->part->release(allocation->part->policy().unlink); !released) {
        // The allocation existed: no hint is at fault, the file failed (a write-back).
        return raise_on_comm(MPI_COMM_WORLD, file_failure("MPI_Free_mem", allocation->rank, released.error()));
    }
    return MPI_SUCCESS;
}

int attach(MPI_Win win, void* base, MPI_Aint size) {
    if (const int rc = PMPI_Win_attach(win, base, size); rc != MPI_SUCCESS) {
        return rc;
    }
    if (size <= 0) {
        return MPI_SUCCESS;
    }
    const auto length = static_cast<std::size_t>(size);
    if (auto allocation = Registry::instance().allocation_holding(base, length)) {
        const auto offset = static_cast<std::size_t>(static_cast<std::byte*>(base) - allocation->part->data());
        Registry::instance()
            .dynamic_window(win, window_rank(win))
            ->attach({.part = allocation->part, .offset = offset, .length = length, .base = base});
    }
    return MPI_SUCCESS;
}

int detach(MPI_Win win, const void* base) {
    if (const int rc = PMPI_Win_detach(win, base); rc != MPI_SUCCESS) {
        return rc;
    }
    if (auto record = Registry::instance().find_window(win)) {
        record->detach(base);
    }
    return MPI_SUCCESS;
}

}  // namespace

}  // namespace strata::mpi

using strata::mpi::guarded;

extern "C" int MPI_Alloc_mem(MPI_Aint size, MPI_Info info, void* baseptr) {
    return guarded("MPI_Alloc_mem", [&] { return strata::mpi::allocate_memory(size, info, baseptr); });
}

extern "C" int MPI_Free_mem(void* base) {
    return guarded("MPI_Free_mem", [&] { return strata::mpi::free_memory(base); });
}

extern "C" int MPI_Win_attach(MPI_Win win, void* base, MPI_Aint size) {
    return guarded("MPI_Win_attach", [&] { return strata::mpi::attach(win, base, size); });
}

extern "C" int MPI_Win_detach(MPI_Win win, const void* base) {
    return guarded("MPI_Win_detach", [&] { return strata::mpi::detach(win, base); });
}
