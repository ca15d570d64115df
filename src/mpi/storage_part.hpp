// SPDX-License-Identifier: MIT
// The memory behind one window (or one MPI_Alloc_mem allocation) on one rank:
// a strata Region plus what MPI needs around it — undoing a setup that other
// ranks rejected, writing back at sync and free, and the release policy the
// hints chose.
//
// Thread safety: sync(), flush_async() and release() may be called from any
// thread (the background flusher included); they serialize on an internal
// mutex, and once released every call is a no-op.
#pragma once

#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "mpi/hints.hpp"
#include "strata/region.hpp"

namespace strata::mpi {

/// Where and how to map; built from WindowHints by the caller.
struct PartSpec {
    bool storage = true;  ///< false: anonymous memory only
    StorageOptions file;  ///< path, offset, permissions, writeback
    Factor memory_share = Factor::fixed(0.0);
    Order order = Order::memory_first;
    std::optional<Advice> advice;  ///< kernel advice for the storage part
    bool prefetch = false;         ///< read what the file already holds (AccessPlan)
    bool populate = false;         ///< MADV_POPULATE_WRITE the storage part (AccessPlan)
    bool direct = false;           ///< Writeback::direct if the part fits in memory (AccessPlan)
    bool write_behind = false;     ///< write changed pages while the program stores (AccessPlan)
    bool fill = false;             ///< read the file into anonymous memory at creation (AccessPlan)
    /// Discard on a shared window (whose ranks must see each other's stores,
    /// so no private mapping): the part maps this file, a working copy beside
    /// `file.path` holding its bytes, and sync() copies a range into
    /// `file.path` before making it durable there, so changes reach the file
    /// only at a sync. Empty: the part maps `file.path` itself.
    std::filesystem::path working_copy;
    bool create_working_copy = false;  ///< create it (O_EXCL) and copy the file's bytes in; else open it
    /// The memory part from this file, shared by every process that maps it
    /// (CombinedOptions::shared_memory_fd): a shared window's ranks. -1: private memory.
    int shared_memory_fd = -1;
};

/// What happens when the part is released.
struct ReleasePolicy {
    bool discard = false;  ///< changes since the last sync never reach the file
    bool unlink = false;   ///< remove the file
    SyncMode sync = SyncMode::on_sync;
};

class StoragePart {
public:
    /// Maps `size` bytes per `spec`.
    static Result<std::shared_ptr<StoragePart>> create(std::size_t size, const PartSpec& spec,
                                                       const ReleasePolicy& policy);

    StoragePart(const StoragePart&) = delete;
    StoragePart& operator=(const StoragePart&) = delete;
    ~StoragePart() { stop_write_behind(); }

    [[nodiscard]] std::byte* data() const noexcept { return region_.data(); }
    [[nodiscard]] std::size_t size() const noexcept { return region_.size(); }
    [[nodiscard]] std::size_t memory_bytes() const noexcept { return region_.memory_bytes(); }
    [[nodiscard]] std::size_t storage_bytes() const noexcept { return region_.storage_bytes(); }
    [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }
    [[nodiscard]] const ReleasePolicy& policy() const noexcept { return policy_; }
    /// The write-back the storage part uses (kernel, explicit_sync or direct).
    [[nodiscard]] Writeback writeback() const noexcept { return region_.writeback(); }
    /// True if sync() may run while another thread stores to the part (a
    /// sync on another rank's behalf, storage_alloc_remote_sync): kernel
    /// write-back, or direct write-back whose stores the kernel tracks. Not
    /// where sync maps the file back over changed pages (discard, direct
    /// without tracking): a store racing with it could be lost.
    [[nodiscard]] bool syncs_while_storing() const noexcept {
        return region_.writeback() == Writeback::kernel || region_.tracks_writes();
    }
    /// True if a thread writes changed pages behind the program (write-behind).
    [[nodiscard]] bool writes_behind() const noexcept { return writer_.joinable(); }
    /// True if the storage part was read from the file into anonymous memory
    /// with parallel O_DIRECT reads at creation (read_once).
    [[nodiscard]] bool filled() const noexcept { return region_.filled(); }
    /// True if that read runs behind the program: MPI_Win_allocate returned
    /// once the reads were started (Region::fills_behind).
    [[nodiscard]] bool fills_behind() const noexcept { return region_.fills_behind(); }
    /// True unless a read behind the program is still running.
    [[nodiscard]] bool fill_complete() const noexcept { return region_.fill_complete(); }

    /// True if the part maps a working copy (PartSpec::working_copy).
    [[nodiscard]] bool has_working_copy() const noexcept { return target_.has_value(); }

    /// Undoes create() after another rank failed: unmaps without writing
    /// back, removes the file if create() made it, else shrinks it back.
    void abandon() noexcept;
    /// Makes [offset, offset+length) durable, unless the policy is on_free.
    Result<void> sync(std::size_t offset, std::size_t length);
    /// Starts write-back of the whole part without waiting (the flusher).
    Result<void> flush_async();
    /// At MPI_Win_free / MPI_Free_mem: write back unless discard (and unless
    /// the file is about to be removed), unmap, remove the file if unlink.
    /// `unlink` may be narrowed by the caller (only rank 0 removes a shared file).
    Result<void> release(bool unlink);

private:
    StoragePart(Region region, std::filesystem::path path, const ReleasePolicy& policy,
                std::optional<Region> target = std::nullopt);
    /// The part over a working copy (PartSpec::working_copy).
    static Result<std::shared_ptr<StoragePart>> create_over_copy(std::size_t size, const PartSpec& spec,
                                                                 const ReleasePolicy& policy);
    /// The write-behind thread: writes the pages changed since its last pass
    /// (all but the tail each run of them ends with), polling every
    /// millisecond while it finds some and backing off to 64 ms when not.
    void write_behind();
    void stop_write_behind() noexcept;

    std::mutex mutex_;
    std::condition_variable wake_;
    bool stopping_ = false;
    std::thread writer_;
    Region region_;
    std::optional<Region> target_;  ///< the window's file behind a working copy, written at sync
    std::filesystem::path path_;
    ReleasePolicy policy_;
};

}  // namespace strata::mpi
