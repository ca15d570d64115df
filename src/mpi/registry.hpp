// SPDX-License-Identifier: MIT
// What libstrata-mpi knows about the program's windows and allocations.
//
// Thread safety: every member of Registry may be called from any thread
// (MPI_THREAD_MULTIPLE); lookups are a relaxed atomic load while nothing is
// registered, so programs without storage windows pay no lock. Records are
// shared_ptrs: a record taken out of the registry stays valid for whoever
// still holds it (the flusher, a concurrent MPI_Win_sync).
#pragma once

#include <atomic>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "mpi/common.hpp"
#include "mpi/exposure.hpp"
#include "mpi/hints.hpp"
#include "mpi/remote_sync.hpp"
#include "mpi/storage_part.hpp"

namespace strata::mpi {

/// A storage-backed range of one window on this rank.
struct Segment {
    std::shared_ptr<StoragePart> part;
    std::size_t offset = 0;  ///< within the part
    std::size_t length = 0;
    const void* base = nullptr;  ///< for dynamic windows: the address given to MPI_Win_attach
};

/// One rank's share of a shared window, as MPI_Win_shared_query reports it.
struct SharedPeer {
    MPI_Aint size = 0;
    MPI_Aint disp_unit = 1;
    std::size_t offset = 0;  ///< within the mapping of the whole file
};

/// A window created or extended by this library.
struct WindowRecord {
    int flavor = MPI_WIN_FLAVOR_ALLOCATE;  ///< what MPI_Win_get_attr must report
    int rank = 0;                          ///< in the window's communicator, for messages
    std::shared_ptr<StoragePart> owned;    ///< released at MPI_Win_free (not for dynamic windows)
    bool unlink_at_free = false;           ///< shared windows: only rank 0 removes the file
    HintMap reported;                      ///< extra keys for MPI_Win_get_info (set before add_window)
    std::shared_ptr<RemoteSync> remote;    ///< storage_alloc_remote_sync (set before add_window)
    std::byte* mapping = nullptr;          ///< shared windows: this rank's view of the whole file
    std::vector<SharedPeer> peers;         ///< shared windows, indexed by rank
    /// RMA displacements are translated (rma.cpp) and MPI_WIN_BASE/SIZE/
    /// DISP_UNIT report the program's own values: for shared storage windows
    /// (created over the whole mapping with disp_unit 1, win_allocate_shared.cpp)
    /// and for windows whose memory MPI exposes at another base (exposure.hpp).
    bool translated = false;
    std::vector<Target> targets;  ///< indexed by rank, if translated
    void* own_base = nullptr;
    MPI_Aint own_size = 0;
    int own_disp_unit = 1;

    /// The keys MPI_Win_get_info adds, as they are now (MPI_Win_set_info may drop some).
    [[nodiscard]] HintMap reported_now() const;
    /// MPI_Win_set_info gave `key` a value: MPI's answer counts from now on,
    /// unless the key describes the storage (alloc_type, storage_alloc_*,
    /// access_style, file_perm, striping_*, strata_*), which does not change.
    void forget_reported(const std::string& key);

    /// Makes the record translated; before Registry::add_window.
    void translate(std::vector<Target> by_rank, void* base, MPI_Aint size, MPI_Aint disp_unit);

    /// The storage-backed ranges MPI_Win_sync must make durable.
    std::vector<Segment> segments() const;
    void attach(Segment segment);
    void detach(const void* base);

private:
    mutable std::mutex mutex_;  // attachments change while other threads sync
    std::vector<Segment> segments_;
};

std::shared_ptr<WindowRecord> make_record(int flavor, int rank);

/// An MPI_Alloc_mem allocation on storage.
struct Allocation {
    std::shared_ptr<StoragePart> part;
    int rank = 0;        ///< in MPI_COMM_WORLD, for messages
    unsigned index = 0;  ///< %w
    HintMap reported;    ///< what MPI_Win_get_info adds for a window made over it (MPI_Win_create)
};

class Registry {
public:
    static Registry& instance();

    void add_window(MPI_Win win, std::shared_ptr<WindowRecord> record);
    [[nodiscard]] std::shared_ptr<WindowRecord> find_window(MPI_Win win) const;
    /// Removes and returns the record: done before PMPI_Win_free, because
    /// MPI may hand the same handle to a window another thread creates next.
    std::shared_ptr<WindowRecord> take_window(MPI_Win win);
    /// The record of a dynamic window, created at its first storage attach;
    /// `rank` (in the window's group) is used if it is created now.
    std::shared_ptr<WindowRecord> dynamic_window(MPI_Win win, int rank);

    void add_allocation(const void* base, std::shared_ptr<Allocation> allocation);
    std::shared_ptr<Allocation> take_allocation(const void* base);
    /// The allocation holding [address, address+length), if any.
    [[nodiscard]] std::shared_ptr<Allocation> allocation_holding(const void* address, std::size_t length) const;

    /// The displacement MPI must be given for `target` of a translated
    /// window; `disp` unchanged for every other window.
    /// One relaxed atomic load while no shared storage window exists.
    [[nodiscard]] MPI_Aint target_displacement(MPI_Win win, int target, MPI_Aint disp) const;

    /// %w of the next window or allocation given storage hints: one counter
    /// for MPI_Win_allocate, MPI_Win_allocate_shared and MPI_Alloc_mem, so
    /// that one file name template tells every allocation of a process apart.
    unsigned next_index() noexcept { return index_.fetch_add(1, std::memory_order_relaxed); }

private:
    Registry() = default;

    mutable std::shared_mutex mutex_;    // RMA calls only read: they must not serialize
    std::atomic<std::size_t> count_{0};  // windows + allocations, for the lock-free fast path
    std::atomic<std::size_t> translated_{0};
    std::unordered_map<MPI_Win, std::shared_ptr<WindowRecord>> windows_;
    std::map<const std::byte*, std::shared_ptr<Allocation>> allocations_;
    std::atomic<unsigned> index_{0};
};

/// Background write-back for storage_alloc_sync=async. The thread runs only
/// while such parts exist; it calls StoragePart::flush_async every
/// STRATA_MPI_FLUSH_INTERVAL_MS (default 1000) and makes no MPI calls.
void flush_in_background(const std::shared_ptr<StoragePart>& part);

}  // namespace strata::mpi
