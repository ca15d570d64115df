// SPDX-License-Identifier: MIT
// A message channel between the ranks of an MPI job, with liveness: the
// transport the DSM (src/dsm) and the distributed OCR runtime
// (src/runtime/ocr/dist, through libstrata-ocr-dist) both use.
//
// Messages are byte buffers whose first byte is a kind (counted per kind in
// traffic()). The communicator is a duplicate with MPI_ERRORS_RETURN: an MPI
// error is a Result, never an abort. No call blocks: sends are MPI_Isend
// whose buffers are kept until MPI_Test says done, receives are MPI_Improbe +
// MPI_Imrecv of a message already there. So a dead peer never blocks a
// survivor in MPI; it only stops answering, which the liveness check turns
// into a dead peer.
//
// Large byte ranges move without a copy through the channel: send_bytes()
// sends from the caller's memory and receive_bytes() receives into it, each
// on a tag of its own, completing in a later poll().
//
// Thread safety: every call may run from several threads at once
// (MPI_THREAD_MULTIPLE); sends from one thread to one destination keep their
// order, and the send lock keeps the order of sends made under the caller's
// own lock.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <mpi.h>

#include "net/buffer_pool.hpp"
#include "net/bytes.hpp"
#include "strata/error.hpp"

namespace strata::net {

using Clock = std::chrono::steady_clock;

struct ChannelConfig {
    int tag = 0;                  ///< the tag of the channel's messages (byte ranges use the other tags)
    int kinds = 1;                ///< message kinds: the first byte of a message, below this
    std::string who;              ///< the user named in errors ("dsm", "strata-ocr")
    std::vector<std::byte> ping;  ///< the message check_alive() sends (its user answers it)
};

/// A received message: the whole buffer (kind byte included), shared so that a
/// user can send the same bytes on without copying them.
struct Received {
    int source = -1;
    std::shared_ptr<Bytes> buffer;
};

/// Messages and bytes of one kind, sent or received.
struct KindCount {
    std::uint64_t messages = 0;
    std::uint64_t bytes = 0;
};

class MpiChannel {
public:
    static Result<std::unique_ptr<MpiChannel>> create(MPI_Comm comm, ChannelConfig config);
    ~MpiChannel();
    MpiChannel(const MpiChannel&) = delete;
    MpiChannel& operator=(const MpiChannel&) = delete;

    [[nodiscard]] int rank() const { return rank_; }
    [[nodiscard]] int size() const { return size_; }
    [[nodiscard]] MPI_Comm comm() const { return comm_; }

    /// A message buffer of `size` bytes (contents unspecified) from the channel's pool of large
    /// buffers (buffer_pool.hpp), to fill and post_buffer(), or to keep.
    [[nodiscard]] std::shared_ptr<Bytes> buffer(std::size_t size) { return pool_->take(size); }
    /// Sends `head` followed by `payload` to `dest`; the bytes are copied, the call does not wait.
    Result<void> post(int dest, std::span<const std::byte> head, std::span<const std::byte> payload = {});
    /// Sends `buffer` as it is, without a copy; it is kept alive until MPI is done with it.
    Result<void> post_buffer(int dest, std::shared_ptr<Bytes> buffer);
    /// Receives one waiting message, if any; also completes sends and byte ranges. A
    /// message whose sender stops sending it midway (it died during a large transfer,
    /// or its link was cut) makes the sender dead after the receive timeout, and no
    /// message is returned. A message still arriving holds up only later messages of
    /// its own sender: each call tests it for at most about a millisecond and then
    /// returns, so the other peers' messages (their pings among them) are received
    /// meanwhile. Messages of one sender are returned in the order it sent them.
    Result<bool> poll(Received& in);
    /// Whether a message of the channel waits, not yet matched by poll() (MPI_Iprobe).
    [[nodiscard]] bool message_waiting();
    /// Messages matched by poll() and still arriving (returned by a later poll()).
    [[nodiscard]] std::size_t arriving() const { return arriving_count_.load(std::memory_order_relaxed); }
    /// How long a matched message may take to arrive in full.
    void set_receive_timeout(std::chrono::milliseconds timeout) { receive_timeout_ = timeout; }

    /// The largest tag send_bytes() and receive_bytes() may use (the channel's tag excepted).
    [[nodiscard]] int tag_limit() const { return tag_ub_; }
    /// Sends `bytes` from the caller's memory on `tag`; `done(true)` runs in a later
    /// poll() once MPI no longer needs them, `done(false)` if `dest` died first.
    /// The memory must stay valid and unchanged until then.
    Result<void> send_bytes(int dest, int tag, std::span<const std::byte> bytes, std::function<void(bool)> done);
    /// Receives into `bytes` what `source` sends with send_bytes() on `tag`; `done(true)`
    /// runs in a later poll() once they are all there, `done(false)` if `source` died
    /// first (MPI may then still write into `bytes`: `keep` is held for ever).
    Result<void> receive_bytes(int source, int tag, std::span<std::byte> bytes, std::shared_ptr<void> keep,
                               std::function<void(bool)> done);

    /// Liveness: `rank` was heard of now / when last.
    void heard(int rank);
    [[nodiscard]] Clock::time_point last_heard(int rank) const;
    /// Pings `rank` if it was not heard of for `heartbeat` and not pinged since;
    /// true while it is considered alive: false once it answered nothing for
    /// `timeout` since this rank began asking (the first ping after its
    /// silence). Silence alone is not death: two ranks that had nothing to say
    /// to each other for longer than `timeout` (a DSM client and another
    /// client between two barriers) must not find each other dead at the
    /// next wait, before a single ping went unanswered. A message of `rank` that
    /// MPI holds and no poll() took yet counts as an answer.
    bool check_alive(int rank, std::chrono::milliseconds heartbeat, std::chrono::milliseconds timeout);
    void mark_dead(int rank);
    [[nodiscard]] bool is_dead(int rank) const;

    [[nodiscard]] std::vector<KindCount> sent() const;
    [[nodiscard]] std::vector<KindCount> received() const;
    /// Sends still in flight (kept until MPI completes them).
    [[nodiscard]] std::size_t sends_in_flight() const;
    /// Waits up to `limit` for sends in flight; those to dead peers are abandoned.
    void flush(std::chrono::milliseconds limit);

private:
    void drain_unreceived() noexcept;
    explicit MpiChannel(ChannelConfig config) : config_(std::move(config)) {}
    struct Send {
        MPI_Request request = MPI_REQUEST_NULL;
        std::shared_ptr<Bytes> buffer;
        int dest = -1;
    };
    /// A message matched by MPI_Improbe, received by MPI_Imrecv: returned by poll()
    /// once complete and no earlier message of its source is still arriving.
    struct Arriving {
        int source = -1;
        MPI_Request request = MPI_REQUEST_NULL;
        std::shared_ptr<Bytes> buffer;
        Clock::time_point deadline;  ///< matched + the receive timeout
        bool complete = false;
    };
    /// A byte range in flight (send_bytes / receive_bytes): its requests, one per piece.
    struct Range {
        std::vector<MPI_Request> requests;
        int peer = -1;
        std::shared_ptr<void> keep;
        std::function<void(bool)> done;
    };
    /// Posts `range` in pieces of at most piece_limit bytes, `post(offset, n, request)` each (an
    /// empty range: one empty piece), and keeps it in flight; a failed post marks the peer dead.
    template <class Post>
    Result<void> post_range(Range range, std::size_t size, std::string_view call, std::string_view direction,
                            Post post);
    Result<void> send_locked(int dest, std::shared_ptr<Bytes> buffer);
    void retire_locked();
    Result<void> match_locked();
    Result<bool> test_arriving_locked();
    bool take_complete_locked(Received& in);
    void complete_ranges();
    void count(std::vector<std::atomic<std::uint64_t>>& messages, std::vector<std::atomic<std::uint64_t>>& bytes,
               std::byte kind, std::size_t size);

    ChannelConfig config_;
    MPI_Comm comm_ = MPI_COMM_NULL;
    int rank_ = -1;
    int size_ = 0;
    int tag_ub_ = 32767;
    mutable std::mutex send_mu_;
    std::list<Send> sends_;
    std::mutex recv_mu_;
    std::chrono::milliseconds receive_timeout_{5000};
    std::list<Arriving> arriving_;  // in the order MPI matched them
    std::atomic<std::size_t> arriving_count_{0};
    /// Receives abandoned because their peer died midway: MPI may still write into the buffer.
    std::list<std::pair<MPI_Request, std::shared_ptr<void>>> abandoned_;
    std::mutex range_mu_;
    std::list<Range> ranges_;
    std::unique_ptr<std::atomic<std::int64_t>[]> last_heard_;  // steady ns
    std::unique_ptr<std::atomic<std::int64_t>[]> last_ping_;
    std::unique_ptr<std::atomic<std::int64_t>[]> asking_since_;  // steady ns of the first unanswered ping; 0: none
    std::unique_ptr<std::atomic<bool>[]> dead_;
    std::shared_ptr<BufferPool> pool_ = BufferPool::create();  ///< received and copied messages
    std::vector<std::atomic<std::uint64_t>> sent_msgs_, sent_bytes_, recv_msgs_, recv_bytes_;
};

/// "<MPI error string>" of an MPI return code.
std::string mpi_error_text(int code);

}  // namespace strata::net
