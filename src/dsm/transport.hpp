// SPDX-License-Identifier: MIT
// MPI two-sided transport of the DSM: the MPI channel of src/net (nonblocking
// sends, a poll that receives whatever arrived, per-kind counters, liveness)
// with the DSM's fixed header (wire.hpp) on every message.
//
// An MPI error is a Result, never an abort, and a dead peer never blocks a
// survivor in MPI: it only stops answering, which the liveness check turns
// into peer_dead (net/mpi_channel.hpp).
//
// Thread safety: post(), poll() and the liveness calls may run from several
// threads at once (MPI_THREAD_MULTIPLE); sends from one thread to one
// destination keep their order, and the send lock keeps the order of sends
// made under the caller's own lock.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include <mpi.h>

#include "dsm/event_log.hpp"
#include "dsm/wire.hpp"
#include "net/mpi_channel.hpp"
#include "strata/dsm.hpp"
#include "strata/error.hpp"

namespace strata::dsm {

using Clock = net::Clock;

/// A received message: the whole buffer (header included) is kept, shared,
/// so that a server can send the same bytes on without copying them.
struct Incoming {
    int source = -1;
    wire::Header header;
    std::shared_ptr<net::Bytes> buffer;
    [[nodiscard]] std::span<const std::byte> payload() const {
        return buffer ? std::span<const std::byte>(*buffer).subspan(sizeof(wire::Header))
                      : std::span<const std::byte>();
    }
};

class Transport {
public:
    static Result<std::unique_ptr<Transport>> create(MPI_Comm comm);
    Transport(const Transport&) = delete;
    Transport& operator=(const Transport&) = delete;

    [[nodiscard]] int rank() const { return channel_->rank(); }
    [[nodiscard]] int size() const { return channel_->size(); }
    [[nodiscard]] MPI_Comm comm() const { return channel_->comm(); }

    /// A message buffer of `size` bytes from the channel's pool (contents unspecified).
    [[nodiscard]] std::shared_ptr<net::Bytes> buffer(std::size_t size) { return channel_->buffer(size); }
    /// Sends header + payload to `dest`; the bytes are copied, the call does not wait.
    Result<void> post(int dest, const wire::Header& h, std::span<const std::byte> payload = {});
    /// Sends `buffer` (a header followed by its payload) as it is, without a copy;
    /// the buffer is kept alive until MPI is done with it.
    Result<void> post_buffer(int dest, std::shared_ptr<net::Bytes> buffer);
    /// Receives one waiting message, if any; also retires completed sends. A message whose
    /// sender stops sending it midway (it died during a large transfer) makes the sender
    /// dead after the receive timeout, and no message is returned.
    Result<bool> poll(Incoming& in);
    /// How long a matched message may take to arrive in full (Options::timeout).
    void set_receive_timeout(std::chrono::milliseconds timeout) { channel_->set_receive_timeout(timeout); }

    /// Liveness: `rank` was heard of now / when last.
    void heard(int rank) { channel_->heard(rank); }
    [[nodiscard]] Clock::time_point last_heard(int rank) const { return channel_->last_heard(rank); }
    /// Pings `rank` if it was not heard of for `heartbeat` and not pinged since;
    /// true while it is considered alive (heard of within `timeout`).
    bool check_alive(int rank, std::chrono::milliseconds heartbeat, std::chrono::milliseconds timeout) {
        return channel_->check_alive(rank, heartbeat, timeout);
    }
    void mark_dead(int rank) { channel_->mark_dead(rank); }
    [[nodiscard]] bool is_dead(int rank) const { return channel_->is_dead(rank); }

    [[nodiscard]] Traffic traffic() const;
    /// Records every message posted or polled from now on in `log` (null: none);
    /// set before the progress thread starts. The channel's own pings are not recorded.
    void set_event_log(EventLog* log) { log_ = log; }
    /// Sends still in flight (kept until MPI completes them).
    [[nodiscard]] std::size_t sends_in_flight() const { return channel_->sends_in_flight(); }
    /// Waits up to `limit` for sends in flight; those to dead peers are abandoned.
    void flush(std::chrono::milliseconds limit) { channel_->flush(limit); }

private:
    explicit Transport(std::unique_ptr<net::MpiChannel> channel) : channel_(std::move(channel)) {}
    std::unique_ptr<net::MpiChannel> channel_;
    EventLog* log_ = nullptr;
};

/// "<MPI error string>" of an MPI return code.
using net::mpi_error_text;

}  // namespace strata::dsm
