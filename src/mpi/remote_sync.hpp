// SPDX-License-Identifier: MIT
// Remote durability of MPI_Win_sync (storage_alloc_remote_sync=true, docs/
// mpi-storage-windows.md "Remote sync"): once an origin's MPI_Win_sync
// returns, every target it wrote to since its previous MPI_Win_sync has made
// those bytes durable.
//
// How: the RMA routines that write (rma.cpp) mark their target; the origin's
// MPI_Win_sync flushes the marked targets it holds a passive-target lock on
// (so the writes are in the target's memory), sends each a request over a
// duplicate of the window's communicator, syncs its own part meanwhile, and
// waits for every target's reply. A target answers from its sync agent
// (sync_agent.cpp), a thread that polls for requests with MPI_Improbe and
// sleeps between polls, so a target that computes outside MPI still answers
// within a poll period, and an idle rank costs no core. Hence
// MPI_THREAD_MULTIPLE is required.
//
// Thread safety: note_* and start/finish may be called from any thread; one
// origin sync of a window runs at a time on a rank (they serialize).
#pragma once

#include <atomic>
#include <cstdint>
#include <expected>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "mpi/common.hpp"
#include "mpi/failure.hpp"

namespace strata::mpi {

struct WindowRecord;

/// One rank's side of the remote sync of one window.
class RemoteSync {
public:
    /// Collective over `comm` (every rank of the window, storage or memory):
    /// duplicates it and learns each rank's pid, host and file (`path`: this
    /// rank's, empty for memory).
    static std::expected<std::shared_ptr<RemoteSync>, Failure> create(MPI_Comm comm, const std::string& path);

    RemoteSync(const RemoteSync&) = delete;
    RemoteSync& operator=(const RemoteSync&) = delete;
    ~RemoteSync();

    /// An RMA call that writes to `target` returned.
    void note_write(int target) noexcept;
    /// Passive-target epochs of this rank (MPI_Win_lock/unlock[_all] returned).
    void note_lock(int target, bool locked) noexcept;
    void note_lock_all(bool locked) noexcept;

    /// Origin side, started before this rank syncs its own part: flushes the
    /// targets written to since the last call and asks them to sync.
    /// Returns the number of requests sent, or a failure naming the target.
    std::expected<std::size_t, Failure> start(MPI_Win win);
    /// Waits for the replies of start(); the failure of the lowest failing
    /// target (its sync failed, or its process died), naming it and its file.
    std::optional<Failure> finish();

    /// Target side (the agent): serves the requests waiting for this window;
    /// true if there were any.
    bool serve(const WindowRecord& record);
    /// Syncs made on other ranks' behalf (MPI_Win_get_info strata_remote_syncs).
    [[nodiscard]] std::uint64_t served() const noexcept { return served_.load(std::memory_order_relaxed); }

    /// At MPI_Win_free, after the agent stopped serving the window (collective).
    void close() noexcept;

    /// True while any window of the process has remote sync (RMA fast path).
    static bool any() noexcept;

private:
    struct Peer {
        int pid = 0;
        bool same_node = false;
        int pidfd = -1;  ///< same node: becomes readable when the process ends
        std::string host;
        std::string path;
    };
    struct Pending;

    RemoteSync(MPI_Comm comm, int rank, std::vector<Peer> peers);
    [[nodiscard]] bool died(int target) const noexcept;
    Failure target_failure(int error_class, int target, std::string_view cause) const;
    Failure dead_target(int target) const;

    MPI_Comm comm_ = MPI_COMM_NULL;  // requests and replies, apart from the program's traffic
    int rank_ = 0;
    std::vector<Peer> peers_;
    std::unique_ptr<std::atomic<bool>[]> written_;  // per target, since the last origin sync
    std::mutex epoch_mutex_;
    bool locked_all_ = false;
    std::vector<int> locks_;            // per target: MPI_Win_lock without its unlock
    std::mutex origin_mutex_;           // one origin sync at a time: replies match by source and tag
    std::unique_ptr<Pending> pending_;  // between start and finish
    std::atomic<std::uint64_t> served_{0};
};

/// rma.cpp: marks `target` of `win` written to (no-op unless remote sync).
void note_write(MPI_Win win, int target) noexcept;

/// The sync agent (sync_agent.cpp): one thread per process, running while
/// some window with remote sync exists.
void start_serving(std::shared_ptr<WindowRecord> record);
/// Returns once the agent no longer touches the window (it may be mid-pass).
void stop_serving(const WindowRecord* record);
/// At MPI_Finalize, after every rank got there: stops and joins the agent.
void stop_all_serving() noexcept;

}  // namespace strata::mpi
