// SPDX-License-Identifier: MIT
// MPI two-sided transport of the DSM (see transport.hpp).
#include "dsm/transport.hpp"

#include <cstring>
#include <thread>

#include <fmt/format.h>

namespace strata::dsm {
namespace {

std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

}  // namespace

std::string mpi_error_text(int code) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(code, text, &len);
    return std::string(text, static_cast<std::size_t>(len));
}

namespace wire {

Header to_header(const proto::Message& m, std::uint64_t chunk, std::uint64_t size) {
    Header h;
    h.kind = static_cast<std::uint8_t>(m.kind);
    h.grant = static_cast<std::uint8_t>(m.grant);
    h.flags =
        static_cast<std::uint8_t>((m.has_data ? kHasData : 0) | (m.cached ? kCached : 0) | (m.publish ? kPublish : 0) |
                                  (m.update ? kUpdate : 0) | (m.kept_copy ? kKept : 0));
    h.client = m.client;
    h.chunk = chunk;
    h.version = m.version;
    h.size = size;
    return h;
}

proto::Message to_message(const Header& h) {
    return proto::Message{.kind = static_cast<proto::Msg>(h.kind),
                          .client = h.client,
                          .version = h.version,
                          .has_data = (h.flags & kHasData) != 0,
                          .cached = (h.flags & kCached) != 0,
                          .grant = static_cast<proto::CState>(h.grant),
                          .publish = (h.flags & kPublish) != 0,
                          .update = (h.flags & kUpdate) != 0,
                          .kept_copy = (h.flags & kKept) != 0};
}

std::expected<proto::Message, std::string> decode(const Header& h, int clients, int receiver) {
    const bool at_home = receiver == kAtHome;
    if (h.kind >= proto::kWireMsgCount || proto::to_home(static_cast<proto::Msg>(h.kind)) != at_home) {
        return std::unexpected(fmt::format("a {} message (kind {}) cannot reach a {}", kind_name(h.kind), h.kind,
                                           at_home ? "home" : "client"));
    }
    if (h.grant > static_cast<std::uint8_t>(proto::CState::M)) {
        return std::unexpected(
            fmt::format("a {} message grants state {}, not one of I, S, E, M", kind_name(h.kind), h.grant));
    }
    if (at_home && (h.client < 0 || h.client >= clients)) {
        return std::unexpected(fmt::format("a {} message names client {}, not one of the {} clients", kind_name(h.kind),
                                           h.client, clients));
    }
    // A client answers as the client the home names: only its own id (or a notify's -1) is taken.
    const bool any = h.kind == static_cast<std::uint8_t>(proto::Msg::notify) && h.client == -1;
    if (!at_home && h.client != receiver && !any) {
        return std::unexpected(
            fmt::format("a {} message for client {} reached client {}", kind_name(h.kind), h.client, receiver));
    }
    return to_message(h);
}

}  // namespace wire

Result<std::unique_ptr<Transport>> Transport::create(MPI_Comm comm) {
    std::unique_ptr<Transport> t(new Transport());
    if (int rc = MPI_Comm_dup(comm, &t->comm_); rc != MPI_SUCCESS) {
        return make_error(Errc::io_error, "dsm::Node::join: MPI_Comm_dup: {}", mpi_error_text(rc));
    }
    MPI_Comm_set_errhandler(t->comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(t->comm_, &t->rank_);
    MPI_Comm_size(t->comm_, &t->size_);
    const auto n = static_cast<std::size_t>(t->size_);
    t->last_heard_ = std::make_unique<std::atomic<std::int64_t>[]>(n);
    t->last_ping_ = std::make_unique<std::atomic<std::int64_t>[]>(n);
    t->dead_ = std::make_unique<std::atomic<bool>[]>(n);
    const std::int64_t now = now_ns();
    for (std::size_t i = 0; i < n; ++i) {
        t->last_heard_[i] = now;
        t->last_ping_[i] = 0;
        t->dead_[i] = false;
    }
    return t;
}

Transport::~Transport() {
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
        MPI_Comm_free(&comm_);
    }
}

Result<void> Transport::post(int dest, const wire::Header& h, std::span<const std::byte> payload) {
    if (dead_[static_cast<std::size_t>(dest)]) {
        return make_error(Errc::peer_dead, "dsm: rank {} is dead (stopped answering)", dest);
    }
    auto buffer = std::make_shared<std::vector<std::byte>>(sizeof(h) + payload.size());
    std::memcpy(buffer->data(), &h, sizeof(h));
    if (!payload.empty()) {
        std::memcpy(buffer->data() + sizeof(h), payload.data(), payload.size());
    }
    std::lock_guard lock(send_mu_);
    return send_locked(dest, std::move(buffer));
}

Result<void> Transport::post_buffer(int dest, std::shared_ptr<std::vector<std::byte>> buffer) {
    if (dead_[static_cast<std::size_t>(dest)]) {
        return make_error(Errc::peer_dead, "dsm: rank {} is dead (stopped answering)", dest);
    }
    std::lock_guard lock(send_mu_);
    return send_locked(dest, std::move(buffer));
}

Result<void> Transport::send_locked(int dest, std::shared_ptr<std::vector<std::byte>> buffer) {
    wire::Header h;
    std::memcpy(&h, buffer->data(), sizeof(h));
    const std::size_t kind = h.kind < wire::kKinds ? h.kind : 0;
    auto& slot = sends_.emplace_back(Send{.buffer = std::move(buffer), .dest = dest});
    const int rc = MPI_Isend(slot.buffer->data(), static_cast<int>(slot.buffer->size()), MPI_BYTE, dest, wire::kTag,
                             comm_, &slot.request);
    if (rc != MPI_SUCCESS) {
        sends_.pop_back();
        return make_error(Errc::peer_dead, "dsm: MPI_Isend to rank {}: {}", dest, mpi_error_text(rc));
    }
    sent_msgs_[kind].fetch_add(1, std::memory_order_relaxed);
    sent_bytes_[kind].fetch_add(slot.buffer->size(), std::memory_order_relaxed);
    if (sends_.size() > 64) {
        retire_locked();
    }
    return {};
}

void Transport::retire_locked() {
    for (auto it = sends_.begin(); it != sends_.end();) {
        int done = 0;
        MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
        it = done != 0 ? sends_.erase(it) : std::next(it);
    }
}

Result<bool> Transport::poll(Incoming& in) {
    {
        std::lock_guard lock(send_mu_);
        if (!sends_.empty()) {
            retire_locked();
        }
    }
    std::lock_guard lock(recv_mu_);
    int flag = 0;
    MPI_Message msg;
    MPI_Status status;
    if (int rc = MPI_Improbe(MPI_ANY_SOURCE, wire::kTag, comm_, &flag, &msg, &status); rc != MPI_SUCCESS) {
        return make_error(Errc::io_error, "dsm: MPI_Improbe: {}", mpi_error_text(rc));
    }
    if (flag == 0) {
        return false;
    }
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    auto buffer = std::make_shared<std::vector<std::byte>>(static_cast<std::size_t>(count));
    auto& buf = *buffer;
    // Never a blocking receive: a large message whose sender dies midway would never complete.
    MPI_Request request = MPI_REQUEST_NULL;
    if (int rc = MPI_Imrecv(buf.data(), count, MPI_BYTE, &msg, &request); rc != MPI_SUCCESS) {
        return make_error(Errc::io_error, "dsm: MPI_Imrecv from rank {}: {}", status.MPI_SOURCE, mpi_error_text(rc));
    }
    const auto deadline = Clock::now() + receive_timeout_;
    for (std::uint64_t round = 0;; ++round) {
        int done = 0;
        if (int rc = MPI_Test(&request, &done, MPI_STATUS_IGNORE); rc != MPI_SUCCESS) {
            return make_error(Errc::io_error, "dsm: receiving from rank {}: {}", status.MPI_SOURCE, mpi_error_text(rc));
        }
        if (done != 0) {
            break;
        }
        if (dead_[static_cast<std::size_t>(status.MPI_SOURCE)] || Clock::now() > deadline) {
            mark_dead(status.MPI_SOURCE);
            abandoned_.emplace_back(request, std::move(buffer));
            return false;
        }
        if (round > 1000) {
            std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
    }
    if (buf.size() < sizeof(wire::Header)) {
        return make_error(Errc::internal, "dsm: a message of {} bytes from rank {} is shorter than a header",
                          buf.size(), status.MPI_SOURCE);
    }
    in.source = status.MPI_SOURCE;
    std::memcpy(&in.header, buf.data(), sizeof(wire::Header));
    in.buffer = std::move(buffer);
    const std::size_t kind = in.header.kind < wire::kKinds ? in.header.kind : 0;
    recv_msgs_[kind].fetch_add(1, std::memory_order_relaxed);
    recv_bytes_[kind].fetch_add(static_cast<std::uint64_t>(count), std::memory_order_relaxed);
    heard(in.source);
    return true;
}

void Transport::heard(int rank) {
    last_heard_[static_cast<std::size_t>(rank)].store(now_ns(), std::memory_order_relaxed);
}

Clock::time_point Transport::last_heard(int rank) const {
    return Clock::time_point(std::chrono::nanoseconds(last_heard_[static_cast<std::size_t>(rank)].load()));
}

bool Transport::check_alive(int rank, std::chrono::milliseconds heartbeat, std::chrono::milliseconds timeout) {
    const auto r = static_cast<std::size_t>(rank);
    if (dead_[r]) {
        return false;
    }
    const std::int64_t now = now_ns();
    const std::int64_t silent = now - last_heard_[r].load();
    if (silent > std::chrono::nanoseconds(timeout).count()) {
        return false;
    }
    const std::int64_t hb = std::chrono::nanoseconds(heartbeat).count();
    if (silent > hb && now - last_ping_[r].load() > hb) {
        last_ping_[r] = now;
        wire::Header h;
        h.kind = static_cast<std::uint8_t>(wire::Kind::ping);
        (void)post(rank, h);
    }
    return true;
}

void Transport::mark_dead(int rank) {
    dead_[static_cast<std::size_t>(rank)] = true;
}
bool Transport::is_dead(int rank) const {
    return dead_[static_cast<std::size_t>(rank)];
}

std::size_t Transport::sends_in_flight() const {
    std::lock_guard lock(send_mu_);
    return sends_.size();
}

void Transport::flush(std::chrono::milliseconds limit) {
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

Traffic Transport::traffic() const {
    Traffic t;
    for (int k = 0; k < wire::kKinds; ++k) {
        const auto i = static_cast<std::size_t>(k);
        t.kinds.emplace_back(wire::kind_name(k));
        t.sent.push_back({sent_msgs_[i].load(), sent_bytes_[i].load()});
        t.received.push_back({recv_msgs_[i].load(), recv_bytes_[i].load()});
    }
    return t;
}

TrafficCount Traffic::total_sent() const {
    TrafficCount c;
    for (const auto& s : sent) {
        c.messages += s.messages;
        c.bytes += s.bytes;
    }
    return c;
}

}  // namespace strata::dsm
