// SPDX-License-Identifier: MIT
// MPI two-sided transport of the DSM: nonblocking sends of header+payload,
// a poll that receives whatever arrived, per-kind counters, and liveness
// (when each peer was last heard of, pings to those a waiter depends on).
//
// The communicator is a duplicate with MPI_ERRORS_RETURN: an MPI error is a
// Result, never an abort. No call blocks: sends are MPI_Isend whose buffers
// are kept until MPI_Test says done, receives are MPI_Improbe + MPI_Mrecv of
// a message already there. So a dead peer never blocks a survivor in MPI; it
// only stops answering, which the liveness check turns into peer_dead.
//
// Thread safety: post(), poll() and the liveness calls may run from several
// threads at once (MPI_THREAD_MULTIPLE); sends from one thread to one
// destination keep their order, and the send lock keeps the order of sends
// made under the caller's own lock.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include <mpi.h>

#include "dsm/wire.hpp"
#include "strata/dsm.hpp"
#include "strata/error.hpp"

namespace strata::dsm {

using Clock = std::chrono::steady_clock;

/// A received message: the whole buffer (header included) is kept, shared,
/// so that a server can send the same bytes on without copying them.
struct Incoming {
    int source = -1;
    wire::Header header;
    std::shared_ptr<std::vector<std::byte>> buffer;
    [[nodiscard]] std::span<const std::byte> payload() const {
        return buffer ? std::span<const std::byte>(*buffer).subspan(sizeof(wire::Header))
                      : std::span<const std::byte>();
    }
};

class Transport {
public:
    static Result<std::unique_ptr<Transport>> create(MPI_Comm comm);
    ~Transport();
    Transport(const Transport&) = delete;
    Transport& operator=(const Transport&) = delete;

    [[nodiscard]] int rank() const { return rank_; }
    [[nodiscard]] int size() const { return size_; }
    [[nodiscard]] MPI_Comm comm() const { return comm_; }

    /// Sends header + payload to `dest`; the bytes are copied, the call does not wait.
    Result<void> post(int dest, const wire::Header& h, std::span<const std::byte> payload = {});
    /// Sends `buffer` (a header followed by its payload) as it is, without a copy;
    /// the buffer is kept alive until MPI is done with it.
    Result<void> post_buffer(int dest, std::shared_ptr<std::vector<std::byte>> buffer);
    /// Receives one waiting message, if any; also retires completed sends. A message whose
    /// sender stops sending it midway (it died during a large transfer) makes the sender
    /// dead after the receive timeout, and no message is returned.
    Result<bool> poll(Incoming& in);
    /// How long a matched message may take to arrive in full (Options::timeout).
    void set_receive_timeout(std::chrono::milliseconds timeout) { receive_timeout_ = timeout; }

    /// Liveness: `rank` was heard of now / when last.
    void heard(int rank);
    [[nodiscard]] Clock::time_point last_heard(int rank) const;
    /// Pings `rank` if it was not heard of for `heartbeat` and not pinged since;
    /// true while it is considered alive (heard of within `timeout`).
    bool check_alive(int rank, std::chrono::milliseconds heartbeat, std::chrono::milliseconds timeout);
    void mark_dead(int rank);
    [[nodiscard]] bool is_dead(int rank) const;

    [[nodiscard]] Traffic traffic() const;
    /// Sends still in flight (kept until MPI completes them).
    [[nodiscard]] std::size_t sends_in_flight() const;
    /// Waits up to `limit` for sends in flight; those to dead peers are abandoned.
    void flush(std::chrono::milliseconds limit);

private:
    Transport() = default;
    struct Send {
        MPI_Request request = MPI_REQUEST_NULL;
        std::shared_ptr<std::vector<std::byte>> buffer;
        int dest = -1;
    };
    Result<void> send_locked(int dest, std::shared_ptr<std::vector<std::byte>> buffer);
    void retire_locked();

    MPI_Comm comm_ = MPI_COMM_NULL;
    int rank_ = -1;
    int size_ = 0;
    mutable std::mutex send_mu_;
    std::list<Send> sends_;
    std::mutex recv_mu_;
    std::chrono::milliseconds receive_timeout_{5000};
    /// Receives abandoned because their sender died midway: MPI may still write into the buffer.
    std::list<std::pair<MPI_Request, std::shared_ptr<std::vector<std::byte>>>> abandoned_;
    std::unique_ptr<std::atomic<std::int64_t>[]> last_heard_;  // steady ns
    std::unique_ptr<std::atomic<std::int64_t>[]> last_ping_;
    std::unique_ptr<std::atomic<bool>[]> dead_;
    std::array<std::atomic<std::uint64_t>, wire::kKinds> sent_msgs_{};
    std::array<std::atomic<std::uint64_t>, wire::kKinds> sent_bytes_{};
    std::array<std::atomic<std::uint64_t>, wire::kKinds> recv_msgs_{};
    std::array<std::atomic<std::uint64_t>, wire::kKinds> recv_bytes_{};
};

/// "MPI_Isend: <MPI error string>"
std::string mpi_error_text(int code);

}  // namespace strata::dsm
