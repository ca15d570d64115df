// SPDX-License-Identifier: MIT
// MPI_Win_allocate on storage.
//
// Collective protocol (every rank runs the same steps, so none can hang):
//   1. parse and check the hints locally;
//   2. agree (one Allreduce): on failure every rank raises the lowest failing
//      rank's error before touching any file; the same call tells whether
//      all ranks want memory, whether any wants factor=auto, and rank 0's pid;
//   3. factor=auto only: split the node's memory budget among its ranks;
//   4. create the region locally;
//   5. agree again: on failure every rank abandons what it made (no mapping,
//      descriptor or new file remains) and raises the same error;
//   6. PMPI_Win_create over the region; the window still reports the
//      allocate flavor through MPI_Win_get_attr;
//   7. storage_alloc_remote_sync (if any rank asks): a duplicate communicator
//      and the sync agent (remote_sync.hpp).
#include <algorithm>
#include <array>
#include <climits>

#include <sched.h>
#include <unistd.h>

#include "mpi/hint_source.hpp"
#include "mpi/registry.hpp"
#include "mpi/setup.hpp"

namespace strata::mpi {

namespace {

/// The ranks of `comm` on this node that have `mine` set (1 if the node
/// cannot be found) and, with `cpus`, the CPUs any rank of the node may run
/// on (0 if unknown). Collective over `comm`.
struct NodeCount {
    int ranks = 1;
    int cpus = 0;
};
NodeCount node_count(MPI_Comm comm, bool mine, bool cpus = false) {
    MPI_Comm node = MPI_COMM_NULL;
    NodeCount count;
    int want = mine ? 1 : 0;
    if (PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) != MPI_SUCCESS) {
        return count;
    }
    PMPI_Allreduce(&want, &count.ranks, 1, MPI_INT, MPI_SUM, node);
    if (cpus) {
        // Ranks bound to cores each see one: the node's are the union of their masks.
        cpu_set_t own;
        cpu_set_t all;
        CPU_ZERO(&own);
        CPU_ZERO(&all);
        if (::sched_getaffinity(0, sizeof(own), &own) != 0) {
            CPU_ZERO(&own);
        }
        PMPI_Allreduce(&own, &all, sizeof(cpu_set_t), MPI_BYTE, MPI_BOR, node);
        count.cpus = CPU_COUNT(&all);
    }
    PMPI_Comm_free(&node);
    return count;
}

/// A read_once fill's reader threads (StorageOptions::fill_readers), when
/// the ranks with `mine` set fill at once (0: the region's own default).
/// Collective over `comm`.
unsigned node_fill_readers(MPI_Comm comm, bool mine) {
    const NodeCount node = node_count(comm, mine, true);
    if (node.cpus <= 0) {
        return 0;
    }
    return fill_readers_for(static_cast<unsigned>(node.cpus), static_cast<unsigned>(std::max(node.ranks, 1)));
}

/// factor=auto on several ranks of a node must share one memory budget,
/// else each rank would claim all of it and together they would exceed it.
std::expected<Factor, Failure> automatic_share(const char* routine, MPI_Comm comm, int rank, bool mine,
                                               std::size_t size) {
    const int wanting = node_count(comm, mine).ranks;
    if (!mine) {
        return Factor::fixed(0.0);  // unused by the caller
    }
    auto budget = current_memory_budget();
    if (!budget) {
        return std::unexpected(
            make_failure(MPI_ERR_NO_MEM, routine, rank, "storage_alloc_factor", "auto", budget.error().message));
    }
    const double per_rank = static_cast<double>(budget->usable) / static_cast<double>(std::max(wanting, 1));
    const double share = std::min(1.0, per_rank / static_cast<double>(size));
    detail::log().debug(
        "{}: storage_alloc_factor=auto: {} bytes usable on the node{}, {} rank(s) share it: "
        "{:.3f} of {} bytes in memory",
        routine, budget->usable, budget->cgroup_limited ? " (cgroup limit)" : "", wanting, share, size);
    return Factor::fixed(share);
}

/// The agent thread (remote_sync.hpp) calls MPI while the program does, and
/// a sync on another rank's behalf runs while this rank stores.
std::optional<Failure> check_remote_sync(const char* routine, int rank, const StoragePart* part) {
    int provided = MPI_THREAD_SINGLE;
    PMPI_Query_thread(&provided);
    if (provided != MPI_THREAD_MULTIPLE) {
        return make_failure(MPI_ERR_INFO_VALUE, routine, rank, "storage_alloc_remote_sync", "true",
                            fmt::format("needs MPI_THREAD_MULTIPLE (MPI provides level {}): initialize MPI with "
                                        "MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...), or give the hint in "
                                        "STRATA_MPI_WINDOW_HINTS, which makes MPI_Init ask for it",
                                        provided));
    }
    if (part == nullptr || part->storage_bytes() == 0 || part->syncs_while_storing()) {
        return std::nullopt;
    }
    return make_failure(MPI_ERR_INFO_VALUE, routine, rank, "storage_alloc_remote_sync", "true",
                        "this window's write-back (storage_alloc_discard, or direct write-back where the kernel "
                        "does not track stores) must not run while the rank stores, and a sync on another "
                        "rank's behalf does");
}

/// Step 7 (collective); on failure the window and the part are undone.
int add_remote_sync(WindowRecord& record, MPI_Comm comm, StoragePart* part, MPI_Win* win) {
    auto remote = RemoteSync::create(comm, part != nullptr && part->storage_bytes() > 0 ? part->path().string() : "");
    if (!remote) {
        PMPI_Win_free(win);
        if (part != nullptr) {
            part->abandon();
        }
        return raise_on_comm(comm, remote.error());
    }
    record.remote = std::move(*remote);
    return MPI_SUCCESS;
}

/// The window MPI itself allocates; STRATA_LOG=info says so.
int in_memory(const WindowRequest& r, std::string_view why) {
    const int rc = r.large ? PMPI_Win_allocate_c(r.size, r.disp_unit, r.info, r.comm, r.baseptr, r.win)
                           : PMPI_Win_allocate(r.size, static_cast<int>(r.disp_unit), r.info, r.comm, r.baseptr, r.win);
    if (rc == MPI_SUCCESS && r.size > 0) {
        report_placement(r.routine, comm_rank(r.comm), "window", static_cast<std::size_t>(r.size), nullptr, why);
    }
    return rc;
}

/// This rank's storage part, or null with `failure` set.
std::shared_ptr<StoragePart> create_part(const char* routine, int rank, std::size_t bytes, PartSpec spec,
                                         unsigned fill_readers, const WindowHints& hints,
                                         std::optional<Failure>& failure) {
    spec.file.fill_readers = fill_readers;
    auto made = StoragePart::create(bytes, spec, release_policy(hints));
    if (!made) {
        failure = region_failure(routine, rank, made.error());
        return nullptr;
    }
    return std::move(*made);
}

int allocate(const WindowRequest& request_args) {
    const auto& [routine, size, disp_unit, info, comm, baseptr, win, large] = request_args;
    HintRequest request = request_hints(Routine::win_allocate, info);
    if (!request.applies) {
        return in_memory(request_args, "no storage hints, or outside STRATA_MPI_WINDOW_HINTS_SCOPE");
    }
    const int rank = comm_rank(comm);
    const unsigned index = Registry::instance().next_index();
    WindowHints hints;
    std::optional<Failure> failure = parse_request(routine, rank, request.hints, request.error, hints);
    if (!failure) {
        failure = check_arguments(routine, rank, size, disp_unit);
    }
    const bool fills = hints.storage && access_plan(hints.access_styles, hints.advice).fill;
    std::array<int, 5> agreed{hints.storage ? 0 : 1, hints.storage && hints.factor_auto ? 0 : 1,
                              rank == 0 ? static_cast<int>(::getpid()) : INT_MAX, hints.remote_sync ? 0 : 1,
                              fills ? 0 : 1};
    if (auto failed = agree(comm, failure, agreed)) {
        *win = MPI_WIN_NULL;
        return raise_on_comm(comm, *failed);
    }
    const bool all_memory = agreed[0] == 1;
    const bool any_auto = agreed[1] == 0;
    const bool remote_sync = agreed[3] == 0;  // asked for by any rank: every rank serves requests
    if (all_memory) {
        return in_memory(request_args, "alloc_type=memory on every rank");
    }

    const auto bytes = static_cast<std::size_t>(size);
    Factor memory_share = hints.memory_factor();
    if (any_auto) {
        auto share = automatic_share(routine, comm, rank, hints.storage && hints.factor_auto, bytes);
        if (!share) {
            failure = share.error();
        } else if (hints.factor_auto) {
            memory_share = *share;
        }
    }
    std::string path;
    if (!failure && hints.storage) {
        auto name = file_name(routine, rank, hints, comm_rank(MPI_COMM_WORLD), index, job_id(agreed[2]),
                              kind_name(Routine::win_allocate));
        if (name) {
            path = std::move(*name);
        } else {
            failure = name.error();
        }
    }
    // read_once windows read their files at once: the node's readers share its CPUs.
    const unsigned fill_readers = agreed[4] == 0 ? node_fill_readers(comm, fills && bytes > 0) : 0;
    std::shared_ptr<StoragePart> part;
    if (!failure && bytes > 0) {
        part = create_part(routine, rank, bytes, part_spec(hints, path, memory_share), fill_readers, hints, failure);
    }
    if (remote_sync && !failure) {
        failure = check_remote_sync(routine, rank, part.get());
    }
    if (auto failed = agree(comm, failure)) {
        if (part) {
            part->abandon();
        }
        *win = MPI_WIN_NULL;
        return raise_on_comm(comm, *failed);
    }

    void* base = part ? static_cast<void*>(part->data()) : nullptr;
    std::vector<Target> targets;
    if (const int rc = create_window(base, size, disp_unit, info, comm, win, large, targets); rc != MPI_SUCCESS) {
        if (part) {
            part->abandon();
        }
        return rc;
    }
    auto record = make_record(MPI_WIN_FLAVOR_ALLOCATE, rank);
    if (const int rc = remote_sync ? add_remote_sync(*record, comm, part.get(), win) : MPI_SUCCESS; rc != MPI_SUCCESS) {
        return rc;
    }
    if (!targets.empty()) {
        record->translate(std::move(targets), base, size, disp_unit);
    }
    record->owned = part;
    record->unlink_at_free = hints.unlink;
    record->reported = report(hints, path, part.get());
    if (part && part->storage_bytes() > 0) {
        record->attach({.part = part, .offset = 0, .length = bytes, .base = base});
        if (hints.sync == SyncMode::async) {
            flush_in_background(part);
        }
    }
    report_placement(routine, rank, "window " + std::to_string(index), bytes, part.get(),
                     hints.storage ? hints_source(request.from_environment) : "alloc_type=memory");
    if (record->remote) {
        start_serving(record);
    }
    Registry::instance().add_window(*win, std::move(record));
    *static_cast<void**>(baseptr) = base;
    return MPI_SUCCESS;
}

}  // namespace

}  // namespace strata::mpi

using strata::mpi::guarded;

extern "C" int MPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void* baseptr,
                                MPI_Win* win) {
    return guarded("MPI_Win_allocate", [&] {
        return strata::mpi::allocate({"MPI_Win_allocate", size, disp_unit, info, comm, baseptr, win, false});
    });
}

extern "C" int MPI_Win_allocate_c(MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm, void* baseptr,
                                  MPI_Win* win) {
    return guarded("MPI_Win_allocate_c", [&] {
        return strata::mpi::allocate({"MPI_Win_allocate_c", size, disp_unit, info, comm, baseptr, win, true});
    });
}
