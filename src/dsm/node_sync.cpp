// SPDX-License-Identifier: MIT
// dsm::Node: free, publish-subscribe, barriers, locks and leaving.
#include <fmt/format.h>

#include "dsm/node_impl.hpp"

namespace strata::dsm {
namespace {

// Sends a request about `chunk` to its home and waits for the reply of `kind`.
Result<void> chunk_request(Node::Impl& d, std::string_view op, ChunkId chunk, proto::Message m) {
    if (auto r = d.check_chunk_id(op, chunk); !r) {
        return r;
    }
    int home = d.route(wire::id_server(chunk));
    m.client = d.client_index();
    const wire::Header h = wire::to_header(m, chunk, 0);
    {
        // Posted under mu: a fail-over (which also takes mu) sees the wait with the server it went to.
        std::lock_guard lock(d.mu);
        if (auto it = d.cache.find(chunk); it != d.cache.end()) {
            home = it->second.home;
        }
        d.waits[{static_cast<int>(m.kind), chunk}] = Pending::asked(h, home);
        if (auto r = d.net->post(d.via(home), h); !r) {
            d.waits.erase({static_cast<int>(m.kind), chunk});
            return r;
        }
    }
    return d.wait_reply(fmt::format("{}: chunk={:#x}", op, chunk), static_cast<int>(m.kind), chunk, home);
}

}  // namespace

Result<void> Node::free(ChunkId chunk) {
    Impl& d = *impl_;
    {
        std::lock_guard lock(d.mu);
        if (auto it = d.cache.find(chunk);
            it != d.cache.end() && (it->second.entry.held() || it->second.entry.waiting())) {
            return make_error(Errc::busy, "dsm::Node::free: chunk={:#x}: acquired on this node; release it first",
                              chunk);
        }
    }
    // Exclusive access first: the protocol takes every other copy back (and
    // waits for the acks), so once free returns no client can still read it.
    if (auto w = d.acquire("dsm::Node::free", chunk, Impl::Access::overwrite); !w) {
        return std::unexpected(w.error());
    }
    auto r = chunk_request(d, "dsm::Node::free", chunk, {.kind = proto::Msg::free_req});
    std::lock_guard lock(d.mu);
    d.cache.erase(chunk);
    return r;
}

Result<void> Node::subscribe(ChunkId chunk, SubscribeOptions options) {
    if (impl_->direct_path() && impl_->check_chunk_id("dsm::Node::subscribe", chunk)) {
        // Before the request: direct notifies may beat its answer.
        std::lock_guard lock(impl_->mu);
        const auto c = impl_->cache.find(chunk);
        impl_->notify_order[chunk].subscribing(c != impl_->cache.end() ? c->second.entry.version : 0);
    }
    auto r = chunk_request(*impl_, "dsm::Node::subscribe", chunk,
                           {.kind = proto::Msg::subscribe, .update = options.update_on_write});
    std::lock_guard lock(impl_->mu);
    if (r) {
        impl_->subscriptions[chunk] = options.update_on_write;  // reported if its home dies
    } else if (!impl_->subscriptions.contains(chunk)) {
        impl_->notify_order.erase(chunk);
    }
    return r;
}

Result<void> Node::unsubscribe(ChunkId chunk) {
    Impl& d = *impl_;
    if (auto r = d.check_chunk_id("dsm::Node::unsubscribe", chunk); !r) {
        return r;
    }
    std::lock_guard lock(d.mu);
    int home = d.route(wire::id_server(chunk));
    if (auto it = d.cache.find(chunk); it != d.cache.end()) {
        home = it->second.home;
    }
    d.subscriptions.erase(chunk);
    d.notify_order.erase(chunk);
    return d.net->post(d.via(home),
                       wire::to_header({.kind = proto::Msg::unsubscribe, .client = d.client_index()}, chunk, 0));
}

Result<Notification> Node::wait_notification(std::chrono::milliseconds timeout) {
    Impl& d = *impl_;
    if (d.is_server()) {
        return make_error(Errc::invalid_argument, "dsm::Node::wait_notification: rank {} is a server", rank());
    }
    std::unique_lock lock(d.mu);
    if (!d.cv.wait_for(lock, timeout, [&] { return !d.notes.empty() || d.progress_error.has_value(); })) {
        return make_error(Errc::timeout, "dsm::Node::wait_notification: timeout={}ms: no release of a subscribed chunk",
                          timeout.count());
    }
    if (d.notes.empty()) {
        return std::unexpected(*d.progress_error);
    }
    Notification n = std::move(d.notes.front());
    d.notes.pop_front();
    return n;
}

Result<void> Node::barrier() {
    Impl& d = *impl_;
    if (d.is_server()) {
        return make_error(Errc::invalid_argument, "dsm::Node::barrier: rank {} is a server", rank());
    }
    MPI_Request req = MPI_REQUEST_NULL;
    if (int rc = MPI_Ibarrier(d.clients_comm, &req); rc != MPI_SUCCESS) {
        return make_error(Errc::io_error, "dsm::Node::barrier: MPI_Ibarrier: {}", mpi_error_text(rc));
    }
    for (;;) {
        int done = 0;
        if (int rc = MPI_Test(&req, &done, MPI_STATUS_IGNORE); rc != MPI_SUCCESS) {
            return make_error(Errc::peer_dead, "dsm::Node::barrier: MPI_Test: {}", mpi_error_text(rc));
        }
        if (done != 0) {
            return {};
        }
        // Every other client is pinged while it is silent: a dead one ends the
        // wait, and so does another client's notice that it gave up on a death.
        // The barrier never completes then; a nonblocking collective's request
        // cannot be freed or cancelled, so it is abandoned.
        {
            std::unique_lock lock(d.mu);
            if (d.barrier_broken) {
                return make_error(Errc::peer_dead, "dsm::Node::barrier: {}", *d.barrier_broken);
            }
            for (int c = 0; c < d.clients; ++c) {
                const int r = d.rank_of_client(c);
                if (c != d.client_index() && !d.net->check_alive(r, d.options.heartbeat, d.options.timeout)) {
                    d.net->mark_dead(r);
                    return std::unexpected(d.peer_lost(lock, r, "dsm::Node::barrier",
                                                       fmt::format("rank {} (client {}, node {}) stopped answering "
                                                                   "for {} ms",
                                                                   r, c, d.node_of(r), d.options.timeout.count())));
                }
            }
        }
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
}

Result<void> Node::lock(std::uint32_t id) {
    Impl& d = *impl_;
    if (d.is_server()) {
        return make_error(Errc::invalid_argument, "dsm::Node::lock: rank {} is a server", rank());
    }
    const int server = d.route(static_cast<int>(id % static_cast<std::uint32_t>(d.servers)));
    wire::Header h;
    h.kind = static_cast<std::uint8_t>(wire::Kind::lock_req);
    h.code = id;
    h.client = d.client_index();
    Result<void> r;
    {
        std::lock_guard lk(d.mu);
        if (d.locks_held.contains(id) || d.locks_asked.contains(id)) {
            return make_error(Errc::invalid_argument,
                              "dsm::Node::lock: lock={}: already {} by this client (rank {}); locks are per "
                              "client and not recursive",
                              id, d.locks_held.contains(id) ? "held" : "asked for", rank());
        }
        d.locks_asked.insert(id);
        d.waits[{static_cast<int>(wire::Kind::lock_req), id}] = Pending::asked(h, server);
        r = d.net->post(d.via(server), h);
    }
    if (r) {
        r = d.wait_reply(fmt::format("dsm::Node::lock: lock={}", id), static_cast<int>(wire::Kind::lock_req), id,
                         server);
    }
    std::lock_guard lk(d.mu);
    d.locks_asked.erase(id);
    if (r) {
        d.locks_held.insert(id);
    }
    return r;
}

Result<void> Node::unlock(std::uint32_t id) {
    Impl& d = *impl_;
    if (d.is_server()) {
        return make_error(Errc::invalid_argument, "dsm::Node::unlock: rank {} is a server", rank());
    }
    {
        std::lock_guard lk(d.mu);
        if (d.locks_held.erase(id) == 0) {
            return make_error(Errc::invalid_argument,
                              "dsm::Node::unlock: lock={}: not held by this client (rank {}): unlock without "
                              "lock, of another client's lock, or twice",
                              id, rank());
        }
    }
    wire::Header h;
    h.kind = static_cast<std::uint8_t>(wire::Kind::unlock);
    h.code = id;
    h.client = d.client_index();
    return d.net->post(d.via(d.route(static_cast<int>(id % static_cast<std::uint32_t>(d.servers)))), h);
}

Result<void> Node::leave() {
    Impl& d = *impl_;
    if (d.is_server() || d.left) {
        return make_error(Errc::invalid_argument, "dsm::Node::leave: rank {} is a server or already left", rank());
    }
    auto b = barrier();
    wire::Header h;
    h.kind = static_cast<std::uint8_t>(wire::Kind::bye);
    // After a failed barrier other clients may go on: the servers then stop counting on this one.
    h.code = b ? 0 : 1;
    for (int s = 0; s < d.servers; ++s) {
        (void)d.net->post(s, h);
    }
    d.net->flush(d.options.timeout);
    d.stop_progress();
    d.left = true;
    return b;
}

}  // namespace strata::dsm
