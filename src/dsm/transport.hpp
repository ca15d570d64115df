// SPDX-License-Identifier: MIT
// MPI two-sided transport of the DSM: the MPI channel of src/net (nonblocking
// sends, a poll that receives whatever arrived, per-kind counters, liveness)
// with the DSM's fixed header (wire.hpp) on every message.
//
// An MPI error is a Result, never an abort, and a dead peer never blocks a
// survivor in MPI: it only stops answering, which the liveness check turns
// into peer_dead (net/mpi_channel.hpp).
//
// Same-node sharing (share_node_memory, docs/dsm.md "Same-node data"): a
// buffer of the node arena (shm/node_arena.hpp) posted to a rank of the same
// node that mapped this rank's arena travels by reference: MPI carries the
// header and a SharedRef, the receiver's poll() copies the bytes out of the
// sender's memory and gives its hold back, and above the transport the message
// is the one MPI would have carried. A notify is not copied: it is read in place
// (Incoming::view), its hold given back when the last user of the notification
// drops it. The sender keeps the buffer (so no one
// writes it: the DSM's copy-on-write sees it in use) until the receiver's hold
// is back; a receiver found dead keeps its holds (it may only have stopped
// answering, and still read). Ranks of different nodes, by their node
// names, never share: emulated nodes keep their network.
//
// Thread safety: post(), poll() and the liveness calls may run from several
// threads at once (MPI_THREAD_MULTIPLE); sends from one thread to one
// destination keep their order, and the send lock keeps the order of sends
// made under the caller's own lock.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include <mpi.h>

#include "dsm/event_log.hpp"
#include "dsm/wire.hpp"
#include "net/mpi_channel.hpp"
#include "shm/node_arena.hpp"
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
    /// A same-node notify read in place: the message (header included) in the sender's memory,
    /// which stays unchanged while `view_keep` lives (it holds the sender's buffer).
    std::span<const std::byte> view;
    std::shared_ptr<const void> view_keep;
    [[nodiscard]] std::span<const std::byte> payload() const {
        if (!view.empty()) {
            return view.subspan(sizeof(wire::Header));
        }
        return buffer ? std::span<const std::byte>(*buffer).subspan(sizeof(wire::Header))
                      : std::span<const std::byte>();
    }
};

class Transport {
public:
    static Result<std::unique_ptr<Transport>> create(MPI_Comm comm);
    Transport(const Transport&) = delete;
    Transport& operator=(const Transport&) = delete;
    /// Buffers a same-node reader still holds are leaked, never freed under its copy.
    ~Transport();

    /// Collective: same-node sharing with the ranks whose node name (`nodes`, by rank) is this
    /// rank's, when `enable` (off: this rank neither sends nor takes references). A peer whose
    /// arena cannot be mapped is left to MPI, with a warning naming it on stderr.
    Result<void> share_node_memory(const std::vector<std::string>& nodes, bool enable);
    /// Sleeps until a rank of this node posts to this one (its doorbell: every post to a rank of
    /// the node rings it) or `limit` passes; false, at once, when this rank shares nothing or has
    /// sends or receives in flight (those need it to poll).
    bool doze(std::chrono::microseconds limit);
    /// Lets go of the buffers whose same-node readers gave their holds back; returns how many
    /// holds of live readers are left. A dead reader's holds are kept for good.
    std::size_t release_shared();

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
    /// Waits up to `limit` for sends in flight and for same-node readers to copy what they
    /// were sent; those to dead peers are abandoned.
    void flush(std::chrono::milliseconds limit);

private:
    explicit Transport(std::unique_ptr<net::MpiChannel> channel);
    /// Posts `buffer` to `dest` as a reference to `block` (same-node sharing).
    Result<void> post_shared(int dest, const wire::Header& h, std::shared_ptr<net::Bytes> buffer,
                             shm_detail::ArenaBlock* block);
    /// A received reference: `in` becomes the message it refers to.
    Result<void> take_shared(Incoming& in);
    /// Wakes `dest` if it dozes (a rank of this node whose arena this rank mapped); for any
    /// other `dest`, this rank's own dozing progress, which the send may need.
    void ring(int dest) const;

    std::unique_ptr<net::MpiChannel> channel_;
    EventLog* log_ = nullptr;

    // ---- same-node sharing ----
    shm_detail::NodeArena* arena_ = nullptr;                           ///< null: this rank shares nothing
    std::vector<std::shared_ptr<const shm_detail::PeerArena>> peers_;  ///< by rank: arenas this rank reads
    std::vector<int> reader_index_;  ///< by rank: its hold slot in this rank's blocks, -1: none
    int my_index_ = -1;              ///< this rank's hold slot in its peers' blocks
    struct Hold {
        std::shared_ptr<net::Bytes> buffer;
        shm_detail::ArenaBlock* block = nullptr;
        int dest = -1;
        int reader = -1;
    };
    std::mutex hold_mu_;
    std::vector<Hold> holds_;
    std::atomic<std::size_t> hold_count_{0};
    std::vector<std::atomic<std::uint64_t>> shared_msgs_, shared_bytes_;
};

/// "<MPI error string>" of an MPI return code.
using net::mpi_error_text;

}  // namespace strata::dsm
