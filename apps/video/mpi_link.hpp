// SPDX-License-Identifier: MIT
// MPI for the pipeline without ever blocking on a peer: every operation is
// non-blocking and every wait polls with a deadline and watches for an abort
// message from any rank, so a dead or silent peer gives an error naming it,
// never a hang (hydra's SIGUSR1 notice of a dead rank: hydra_notice.hpp). The
// communicator is a duplicate of MPI_COMM_WORLD with MPI_ERRORS_RETURN.
//
// Thread safety: one thread per rank uses its MpiLink.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common.hpp"

namespace strata::video {

/// Tags: headers (every control message), frames to workers, results to the output, aborts.
enum Tag : int { tag_ctrl = 1, tag_frame = 2, tag_result = 3, tag_abort = 9 };

/// MPI's text for an error code.
std::string mpi_error_text(int code);

class MpiLink {
public:
    explicit MpiLink(Context& ctx);
    ~MpiLink();
    MpiLink(const MpiLink&) = delete;
    MpiLink& operator=(const MpiLink&) = delete;

    [[nodiscard]] MPI_Comm comm() const { return comm_; }

    /// Sends a header; the link keeps it until sent. Returns the request (completed by wait()/flush()).
    Result<MPI_Request> send_header(const Header& h, int dest);
    /// Sends bytes the caller keeps alive until the request completes.
    Result<MPI_Request> send_bytes(const void* data, std::size_t bytes, int dest, int tag);
    Result<MPI_Request> recv_bytes(void* data, std::size_t bytes, int source, int tag);
    Result<MPI_Request> recv_header(Header& h, int source);

    /// Waits for one request; `what` names it in errors ("frame 12 from rank 0").
    Result<void> wait(MPI_Request& request, const std::string& what);
    /// Waits for several.
    Result<void> wait_all(std::vector<MPI_Request>& requests, const std::string& what);
    /// true when the request has completed (never waits).
    Result<bool> test(MPI_Request& request);
    /// Receives the next header from `source` (MPI_ANY_SOURCE too); `what` names the wait in errors.
    /// `patience` multiplies --timeout-ms: a rank waiting for a peer that may itself be waiting
    /// for a third one waits longer, so that the rank next to a failure reports it first.
    Result<Header> next_header(int source, const std::string& what, int patience = 1);
    /// Waits for every header this link sent.
    Result<void> flush();
    /// Cancels a posted receive.
    void cancel(MPI_Request& request);

    /// Best effort: tells every other rank that the job failed (bounded: at most ~0.3 s).
    void abort_all(const std::string& why);
    /// true when the failure came from another rank's abort (no need to tell the others again).
    [[nodiscard]] bool aborted_by_peer() const { return aborted_by_peer_; }
    /// Every failing rank calls this right before it exits: a barrier of the failing ranks (at most
    /// 1 s; a dead peer makes it time out). mpiexec SIGKILLs every rank still running as soon as one
    /// exits non-zero, so ranks that all know the failure leave together instead of the first
    /// exit killing the others before they report ("BAD TERMINATION ... Killed (signal 9)").
    void leave_together();

    /// Called between polls to explain a timeout (e.g. which workers hold frames).
    std::function<std::string()> describe_wait;

    /// A new T that lives as long as the link, which a failing rank never destroys (it exits with
    /// _Exit): for buffers of receives and sends that may still be pending when a wait fails.
    /// Freeing one under a pending receive let UCX copy a late message into unmapped memory
    /// (a SIGSEGV in uct_tcp_iface_progress while the rank waited to leave with the others).
    template <class T>
    T& keep() {
        auto kept = std::make_shared<T>();
        kept_.push_back(kept);
        return *kept;
    }

private:
    std::vector<std::shared_ptr<void>> kept_;
    Result<void> check_interrupts();
    Result<void> poll(const std::function<Result<bool>()>& done, const std::string& what, int patience = 1);
    void reap();

    Context& ctx_;
    MPI_Comm comm_ = MPI_COMM_NULL;
    MPI_Comm failure_comm_ = MPI_COMM_NULL;  ///< only leave_together(): never matches finish_rank's barrier
    struct Owned {
        std::unique_ptr<Header> header;
        MPI_Request request = MPI_REQUEST_NULL;
        int dest = -1;
    };
    std::deque<Owned> sent_;
    bool aborted_by_peer_ = false;
};

/// A barrier on `comm` bounded by 1 s, for ranks that all fail (MpiLink::leave_together).
void leave_together_on(MPI_Comm comm);

/// Collective at start (under a watchdog): true when the ranks are on more than one node,
/// i.e. MPICH's netmod (UCX) carries traffic between them.
bool spans_nodes(Context& ctx);
/// Every rank's --node label into ctx.nodes (a collective at start, under the watchdog), so that
/// an error about a lost peer names its node.
void learn_nodes(Context& ctx);

/// Ends a rank whose part of the job succeeded; never returns. A barrier of every rank (bounded
/// by --timeout-ms: a rank that failed or died makes it an error, exit 1), then MPI_Finalize under
/// a watchdog (a finalize that does not return in --timeout-ms is an error, exit 1, never a hang).
/// Across nodes the ranks first wait 200 ms: MPICH 4.0.2's ch4:ucx finalize disconnects every UCX
/// endpoint and then waits in a PMI barrier, and over UCX's TCP transport a rank that finished its
/// disconnects first stops progressing UCX there while a peer's disconnect from it still needs it
/// (fixed upstream by MPICH PR #6596, "ch4/ucx: remove MPIR_pmi_barrier in finalize"); right after
/// a barrier that deadlock hit 14 of 20 jobs, after 20 ms of quiet none of 20 (docs/video.md).
[[noreturn]] void finish_rank(Context& ctx, MPI_Comm comm, bool across_nodes);

}  // namespace strata::video
