// SPDX-License-Identifier: MIT
// MPI_Win_sync and MPI_Win_free: where storage windows become durable.
//
// MPI_Win_sync keeps its memory semantics (PMPI_Win_sync first) and then
// makes every storage-backed range of the window on this rank durable; the
// region layer writes only dirty pages, so a polling loop of Win_sync on an
// unchanged window costs little. MPI_Win_free frees the MPI window first —
// once it returns on this rank every RMA update has landed — and then writes
// back (unless storage_alloc_discard), removes the file if
// storage_alloc_unlink, and releases the mapping. With
// storage_alloc_remote_sync, MPI_Win_sync also has every target this rank
// wrote to sync its part (remote_sync.hpp).
#include "mpi/registry.hpp"
#include "mpi/setup.hpp"

namespace strata::mpi {

namespace {

std::optional<Failure> sync_own_part(const WindowRecord& record) {
    for (const Segment& segment : record.segments()) {
        if (auto synced = segment.part->sync(segment.offset, segment.length); !synced) {
            return file_failure("MPI_Win_sync", record.rank, synced.error());
        }
    }
    return std::nullopt;
}

int sync_window(MPI_Win win) {
    if (const int rc = PMPI_Win_sync(win); rc != MPI_SUCCESS) {
        return rc;
    }
    const auto record = Registry::instance().find_window(win);
    if (!record) {
        return MPI_SUCCESS;
    }
    if (!record->remote) {
        const auto failure = sync_own_part(*record);
        return failure ? raise_on_win(win, *failure) : MPI_SUCCESS;
    }
    // The targets sync while this rank syncs its own part.
    auto started = record->remote->start(win);
    if (!started) {
        return raise_on_win(win, started.error());
    }
    const auto own = sync_own_part(*record);
    const auto targets = record->remote->finish();
    if (own) {
        return raise_on_win(win, *own);
    }
    return targets ? raise_on_win(win, *targets) : MPI_SUCCESS;
}

int free_window(MPI_Win* win) {
    const MPI_Win handle = *win;
    auto record = Registry::instance().take_window(handle);
    if (!record) {
        return PMPI_Win_free(win);
    }
    MPI_Errhandler handler = MPI_ERRORS_ARE_FATAL;
    PMPI_Win_get_errhandler(handle, &handler);
    if (const int rc = PMPI_Win_free(win); rc != MPI_SUCCESS) {
        Registry::instance().add_window(handle, std::move(record));  // the window still exists
        PMPI_Errhandler_free(&handler);
        return rc;
    }
    if (record->remote) {
        // No request can be pending: every origin left its MPI_Win_sync
        // before it entered the MPI_Win_free that just returned.
        stop_serving(record.get());
        record->remote->close();
    }
    int rc = MPI_SUCCESS;
    if (record->owned) {
        if (auto released = record->owned->release(record->unlink_at_free); !released) {
            rc = raise_after_free(handler, file_failure("MPI_Win_free", record->rank, released.error()));
        }
    }
    PMPI_Errhandler_free(&handler);
    return rc;
}

}  // namespace

}  // namespace strata::mpi

using strata::mpi::guarded;

extern "C" int MPI_Win_sync(MPI_Win win) {
    return guarded("MPI_Win_sync", [&] { return strata::mpi::sync_window(win); });
}

extern "C" int MPI_Win_free(MPI_Win* win) {
    return guarded("MPI_Win_free", [&] { return strata::mpi::free_window(win); });
}
