// SPDX-License-Identifier: MIT
// A message channel between MPI ranks with liveness (see mpi_channel.hpp).
#include "net/mpi_channel.hpp"

#include <algorithm>
#include <climits>
#include <cstring>
#include <thread>

#include <fmt/format.h>

namespace strata::net {
namespace {

std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

// Byte ranges go in pieces MPI counts in an int.
constexpr std::size_t piece_limit = std::size_t{1} << 30;

}  // namespace

bool MpiChannel::message_waiting() {
    int flag = 0;
    return MPI_Iprobe(MPI_ANY_SOURCE, config_.tag, comm_, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && flag != 0;
}

std::string mpi_error_text(int code) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(code, text, &len);
    return std::string(text, static_cast<std::size_t>(len));
}

Result<std::unique_ptr<MpiChannel>> MpiChannel::create(MPI_Comm comm, ChannelConfig config) {
    std::unique_ptr<MpiChannel> t(new MpiChannel(std::move(config)));
    if (int rc = MPI_Comm_dup(comm, &t->comm_); rc != MPI_SUCCESS) {
        return make_error(Errc::io_error, "{}: MPI_Comm_dup: {}", t->config_.who, mpi_error_text(rc));
    }
    MPI_Comm_set_errhandler(t->comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(t->comm_, &t->rank_);
    MPI_Comm_size(t->comm_, &t->size_);
    int* tag_ub = nullptr;
    int found = 0;
    MPI_Comm_get_attr(t->comm_, MPI_TAG_UB, static_cast<void*>(&tag_ub), &found);
    if (found != 0 && tag_ub != nullptr) {
        t->tag_ub_ = *tag_ub;
    }
    const auto n = static_cast<std::size_t>(t->size_);
    t->last_heard_ = std::make_unique<std::atomic<std::int64_t>[]>(n);
    t->last_ping_ = std::make_unique<std::atomic<std::int64_t>[]>(n);
    t->asking_since_ = std::make_unique<std::atomic<std::int64_t>[]>(n);
    t->dead_ = std::make_unique<std::atomic<bool>[]>(n);
    const std::int64_t now = now_ns();
    for (std::size_t i = 0; i < n; ++i) {
        t->last_heard_[i] = now;
        t->last_ping_[i] = 0;
        t->asking_since_[i] = 0;
        t->dead_[i] = false;
    }
    const auto kinds = static_cast<std::size_t>(std::max(1, t->config_.kinds));
    t->sent_msgs_ = std::vector<std::atomic<std::uint64_t>>(kinds);
    t->sent_bytes_ = std::vector<std::atomic<std::uint64_t>>(kinds);
    t->recv_msgs_ = std::vector<std::atomic<std::uint64_t>>(kinds);
    t->recv_bytes_ = std::vector<std::atomic<std::uint64_t>>(kinds);
    return t;
}

MpiChannel::~MpiChannel() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized != 0) {
        return;  // MPI already released everything; no MPI call is allowed now
    }
    // Requests to peers that never took them (dead) are abandoned, not waited for.
    std::lock_guard lock(send_mu_);
    for (auto& s : sends_) {
        int done = 0;
        MPI_Test(&s.request, &done, MPI_STATUS_IGNORE);
        if (done == 0) {
            MPI_Request_free(&s.request);
        }
    }
    sends_.clear();
    if (comm_ != MPI_COMM_NULL) {
        drain_unreceived();
        MPI_Comm_free(&comm_);
    }
}

// Messages that arrived and no poll() took (a peer's last heartbeat, a late
// notification) are received and dropped: left in MPI, each makes MPICH's
// ch4:ucx warn "unexpected tag-receive descriptor ... was not matched" at
// MPI_Finalize. Bounded: a peer that keeps sending cannot hold this up.
void MpiChannel::drain_unreceived() noexcept {
    std::vector<std::byte> scratch;
    for (int i = 0; i < 4096; ++i) {
        int flag = 0;
        MPI_Message msg = MPI_MESSAGE_NULL;
        MPI_Status status;
        if (MPI_Improbe(MPI_ANY_SOURCE, config_.tag, comm_, &flag, &msg, &status) != MPI_SUCCESS || flag == 0) {
            return;
        }
        int bytes = 0;
        MPI_Get_count(&status, MPI_BYTE, &bytes);
        scratch.resize(static_cast<std::size_t>(std::max(bytes, 1)));
        if (MPI_Mrecv(scratch.data(), bytes, MPI_BYTE, &msg, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
            return;
        }
    }
}

void MpiChannel::count(std::vector<std::atomic<std::uint64_t>>& messages,
                       std::vector<std::atomic<std::uint64_t>>& bytes, std::byte kind, std::size_t size) {
    const auto k = static_cast<std::size_t>(kind);
    const std::size_t i = k < messages.size() ? k : 0;
    messages[i].fetch_add(1, std::memory_order_relaxed);
    bytes[i].fetch_add(size, std::memory_order_relaxed);
}

Result<void> MpiChannel::post(int dest, std::span<const std::byte> head, std::span<const std::byte> payload) {
    if (dead_[static_cast<std::size_t>(dest)]) {
        return make_error(Errc::peer_dead, "{}: rank {} is dead (stopped answering)", config_.who, dest);
    }
    auto buffer = pool_->take(head.size() + payload.size());
    std::memcpy(buffer->data(), head.data(), head.size());
    if (!payload.empty()) {
        std::memcpy(buffer->data() + head.size(), payload.data(), payload.size());
    }
    std::lock_guard lock(send_mu_);
    return send_locked(dest, std::move(buffer));
}

Result<void> MpiChannel::post_buffer(int dest, std::shared_ptr<Bytes> buffer) {
    if (dead_[static_cast<std::size_t>(dest)]) {
        return make_error(Errc::peer_dead, "{}: rank {} is dead (stopped answering)", config_.who, dest);
    }
    std::lock_guard lock(send_mu_);
    return send_locked(dest, std::move(buffer));
}

Result<void> MpiChannel::send_locked(int dest, std::shared_ptr<Bytes> buffer) {
    auto& slot = sends_.emplace_back(Send{.buffer = std::move(buffer), .dest = dest});
    const int rc = MPI_Isend(slot.buffer->data(), static_cast<int>(slot.buffer->size()), MPI_BYTE, dest, config_.tag,
                             comm_, &slot.request);
    if (rc != MPI_SUCCESS) {
        sends_.pop_back();
        return make_error(Errc::peer_dead, "{}: MPI_Isend to rank {}: {}", config_.who, dest, mpi_error_text(rc));
    }
    count(sent_msgs_, sent_bytes_, slot.buffer->empty() ? std::byte{0} : slot.buffer->front(), slot.buffer->size());
    if (sends_.size() > 64) {
        retire_locked();
    }
    return {};
}

void MpiChannel::retire_locked() {
    for (auto it = sends_.begin(); it != sends_.end();) {
        int done = 0;
        MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
        it = done != 0 ? sends_.erase(it) : std::next(it);
    }
}

template <class Post>
Result<void> MpiChannel::post_range(Range range, std::size_t size, std::string_view call, std::string_view direction,
                                    Post post) {
    for (std::size_t offset = 0; offset < size || offset == 0; offset += piece_limit) {
        const std::size_t n = std::min(piece_limit, size - offset);
        MPI_Request request = MPI_REQUEST_NULL;
        if (const int rc = post(offset, static_cast<int>(n), &request); rc != MPI_SUCCESS) {
            // Pieces already posted stay with MPI; the peer is treated as dead.
            mark_dead(range.peer);
            return make_error(Errc::peer_dead, "{}: {} of {} bytes {} rank {}: {}", config_.who, call, n, direction,
                              range.peer, mpi_error_text(rc));
        }
        range.requests.push_back(request);
        if (size == 0) {
            break;
        }
    }
    std::lock_guard lock(range_mu_);
    ranges_.push_back(std::move(range));
    return {};
}

Result<void> MpiChannel::send_bytes(int dest, int tag, std::span<const std::byte> bytes,
                                    std::function<void(bool)> done) {
    if (dead_[static_cast<std::size_t>(dest)]) {
        return make_error(Errc::peer_dead, "{}: rank {} is dead (stopped answering)", config_.who, dest);
    }
    return post_range(Range{.requests = {}, .peer = dest, .keep = nullptr, .done = std::move(done)}, bytes.size(),
                      "MPI_Isend", "to", [&](std::size_t offset, int n, MPI_Request* request) {
                          return MPI_Isend(bytes.data() + offset, n, MPI_BYTE, dest, tag, comm_, request);
                      });
}

Result<void> MpiChannel::receive_bytes(int source, int tag, std::span<std::byte> bytes, std::shared_ptr<void> keep,
                                       std::function<void(bool)> done) {
    if (dead_[static_cast<std::size_t>(source)]) {
        return make_error(Errc::peer_dead, "{}: rank {} is dead (stopped answering)", config_.who, source);
    }
    return post_range(Range{.requests = {}, .peer = source, .keep = std::move(keep), .done = std::move(done)},
                      bytes.size(), "MPI_Irecv", "from", [&](std::size_t offset, int n, MPI_Request* request) {
                          return MPI_Irecv(bytes.data() + offset, n, MPI_BYTE, source, tag, comm_, request);
                      });
}

// Runs the callbacks of byte ranges that completed (or whose peer died) outside the lock.
void MpiChannel::complete_ranges() {
    std::vector<std::pair<std::function<void(bool)>, bool>> finished;
    {
        std::lock_guard lock(range_mu_);
        for (auto it = ranges_.begin(); it != ranges_.end();) {
            int done = 0;
            MPI_Testall(static_cast<int>(it->requests.size()), it->requests.data(), &done, MPI_STATUSES_IGNORE);
            if (done != 0) {
                heard(it->peer);
                finished.emplace_back(std::move(it->done), true);
                it = ranges_.erase(it);
            } else if (dead_[static_cast<std::size_t>(it->peer)]) {
                for (MPI_Request& r : it->requests) {
                    if (r != MPI_REQUEST_NULL) {
                        abandoned_.emplace_back(r, it->keep);
                    }
                }
                finished.emplace_back(std::move(it->done), false);
                it = ranges_.erase(it);
            } else {
                ++it;
            }
        }
    }
    for (auto& [done, ok] : finished) {
        if (done) {
            done(ok);
        }
    }
}

// Matches one message waiting for the channel, if any, and starts its receive.
// Never a blocking receive: a large message whose sender dies midway would never complete.
Result<void> MpiChannel::match_locked() {
    int flag = 0;
    MPI_Message msg;
    MPI_Status status;
    if (int rc = MPI_Improbe(MPI_ANY_SOURCE, config_.tag, comm_, &flag, &msg, &status); rc != MPI_SUCCESS) {
        return make_error(Errc::io_error, "{}: MPI_Improbe: {}", config_.who, mpi_error_text(rc));
    }
    if (flag == 0) {
        return {};
    }
    int count_bytes = 0;
    MPI_Get_count(&status, MPI_BYTE, &count_bytes);
    Arriving a{.source = status.MPI_SOURCE,
               .request = MPI_REQUEST_NULL,
               .buffer = pool_->take(static_cast<std::size_t>(count_bytes)),
               .deadline = Clock::now() + receive_timeout_,
               .complete = false};
    if (int rc = MPI_Imrecv(a.buffer->data(), count_bytes, MPI_BYTE, &msg, &a.request); rc != MPI_SUCCESS) {
        return make_error(Errc::io_error, "{}: MPI_Imrecv from rank {}: {}", config_.who, a.source, mpi_error_text(rc));
    }
    // A sender whose message has begun to arrive is alive now, even if its answer to a ping queues
    // behind this message (take_complete_locked keeps each sender's order).
    heard(a.source);
    arriving_.push_back(std::move(a));
    return {};
}

// Tests every message still arriving. One past its deadline, or from a peer found
// dead, makes its sender dead: its receive is abandoned (MPI may still write into
// the buffer, kept for ever) with every later message of that sender, which may
// not be returned before it. True when a message is complete.
Result<bool> MpiChannel::test_arriving_locked() {
    bool any_complete = false;
    std::vector<int> cut_off;
    for (auto it = arriving_.begin(); it != arriving_.end();) {
        if (std::find(cut_off.begin(), cut_off.end(), it->source) != cut_off.end()) {
            if (!it->complete) {
                abandoned_.emplace_back(it->request, std::move(it->buffer));
            }
            it = arriving_.erase(it);
            continue;
        }
        if (!it->complete) {
            int done = 0;
            if (int rc = MPI_Test(&it->request, &done, MPI_STATUS_IGNORE); rc != MPI_SUCCESS) {
                return make_error(Errc::io_error, "{}: receiving from rank {}: {}", config_.who, it->source,
                                  mpi_error_text(rc));
            }
            it->complete = done != 0;
        }
        if (!it->complete && (dead_[static_cast<std::size_t>(it->source)] || Clock::now() > it->deadline)) {
            mark_dead(it->source);
            cut_off.push_back(it->source);
            abandoned_.emplace_back(it->request, std::move(it->buffer));
            it = arriving_.erase(it);
            continue;
        }
        any_complete = any_complete || it->complete;
        ++it;
    }
    return any_complete;
}

// Takes the first complete message that no earlier message of its sender precedes.
bool MpiChannel::take_complete_locked(Received& in) {
    std::vector<int> held;  // senders with an earlier message still arriving
    for (auto it = arriving_.begin(); it != arriving_.end(); ++it) {
        if (!it->complete) {
            held.push_back(it->source);
            continue;
        }
        if (std::find(held.begin(), held.end(), it->source) != held.end()) {
            continue;
        }
        in.source = it->source;
        in.buffer = std::move(it->buffer);
        arriving_.erase(it);
        count(recv_msgs_, recv_bytes_, in.buffer->empty() ? std::byte{0} : in.buffer->front(), in.buffer->size());
        heard(in.source);
        return true;
    }
    return false;
}

Result<bool> MpiChannel::poll(Received& in) {
    {
        std::lock_guard lock(send_mu_);
        if (!sends_.empty()) {
            retire_locked();
        }
    }
    complete_ranges();
    std::lock_guard lock(recv_mu_);
    if (auto matched = match_locked(); !matched) {
        return std::unexpected(matched.error());
    }
    // MPI moves a message only inside its calls: one still arriving is tested a few
    // times in a row, then in 50 us steps, for at most a slice, and the call returns so
    // that its caller serves the other peers (and this sender's pings wait behind it).
    // The steps, not a tight loop: over TCP the kernel's socket buffer takes what
    // arrives between two tests, and a receiver that spun for the whole slice took
    // its node's CPU from the ranks that compute (a 2 MB frame takes ~17 ms on a
    // 1 Gbit/s link: the DSM's progress threads used half of a 20 % node's quota
    // spinning; docs/benchmarks/video).
    constexpr auto slice = std::chrono::milliseconds(1);
    constexpr std::uint64_t tight_rounds = 8;
    const auto until = Clock::now() + slice;
    for (std::uint64_t round = 0;; ++round) {
        auto tested = test_arriving_locked();
        if (!tested) {
            return std::unexpected(tested.error());
        }
        const bool taken = *tested && take_complete_locked(in);
        if (taken || arriving_.empty() || Clock::now() > until) {
            arriving_count_.store(arriving_.size(), std::memory_order_relaxed);
            return taken;
        }
        if (round >= tight_rounds) {
            std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
    }
}

void MpiChannel::heard(int rank) {
    last_heard_[static_cast<std::size_t>(rank)].store(now_ns(), std::memory_order_relaxed);
}

Clock::time_point MpiChannel::last_heard(int rank) const {
    return Clock::time_point(std::chrono::nanoseconds(last_heard_[static_cast<std::size_t>(rank)].load()));
}

bool MpiChannel::check_alive(int rank, std::chrono::milliseconds heartbeat, std::chrono::milliseconds timeout) {
    const auto r = static_cast<std::size_t>(rank);
    if (dead_[r]) {
        return false;
    }
    const std::int64_t now = now_ns();
    const std::int64_t last = last_heard_[r].load();
    const std::int64_t hb = std::chrono::nanoseconds(heartbeat).count();
    if (now - last <= hb) {
        return true;
    }
    // Silent for a heartbeat: ask (again), and count the timeout from the first ask it left unanswered.
    std::int64_t asked = asking_since_[r].load();
    if (asked <= last) {
        asked = now;
        asking_since_[r].store(now);
    }
    if (now - last_ping_[r].load() > hb) {
        last_ping_[r] = now;
        (void)post(rank, config_.ping);
    }
    if (now - asked <= std::chrono::nanoseconds(timeout).count()) {
        return true;
    }
    // A caller behind on its own receives may have the answer waiting in MPI, not yet polled: a
    // message from `rank` there means it is alive, and only this rank is late.
    int waiting = 0;
    if (MPI_Iprobe(rank, config_.tag, comm_, &waiting, MPI_STATUS_IGNORE) == MPI_SUCCESS && waiting != 0) {
        heard(rank);
        return true;
    }
    return false;
}

void MpiChannel::mark_dead(int rank) {
    dead_[static_cast<std::size_t>(rank)] = true;
}
bool MpiChannel::is_dead(int rank) const {
    return dead_[static_cast<std::size_t>(rank)];
}

std::size_t MpiChannel::sends_in_flight() const {
    std::lock_guard lock(send_mu_);
    return sends_.size();
}

void MpiChannel::flush(std::chrono::milliseconds limit) {
    const auto end = Clock::now() + limit;
    while (Clock::now() < end) {
        {
            std::lock_guard lock(send_mu_);
            retire_locked();
            bool pending = false;
            for (const auto& s : sends_) {
                pending = pending || !dead_[static_cast<std::size_t>(s.dest)];
            }
            if (!pending) {
                return;
            }
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
}

std::vector<KindCount> MpiChannel::sent() const {
    std::vector<KindCount> out(sent_msgs_.size());
    for (std::size_t i = 0; i < out.size(); ++i) {
        out[i] = {sent_msgs_[i].load(), sent_bytes_[i].load()};
    }
    return out;
}

std::vector<KindCount> MpiChannel::received() const {
    std::vector<KindCount> out(recv_msgs_.size());
    for (std::size_t i = 0; i < out.size(); ++i) {
        out[i] = {recv_msgs_[i].load(), recv_bytes_[i].load()};
    }
    return out;
}

}  // namespace strata::net
