// SPDX-License-Identifier: MIT
// The client side of the DSM: the progress thread that answers the homes
// through the protocol table, and the waiting parts of the API.
#include <array>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "dsm/node_impl.hpp"

namespace strata::dsm {

Backoff::Backoff(Transport* net, bool doze, bool batch) : net_(doze ? net : nullptr), batch_(batch) {}

void Backoff::idle() {
    if (spins_ == 0) {
        since_ = Clock::now();
    }
    if (++spins_ < 64) {
        std::this_thread::yield();
        return;
    }
    if (net_ != nullptr && Clock::now() - since_ >= kDozeAfter && net_->doze(kDozeFor)) {
        return;
    }
    const int us = std::min(100, (spins_ - 64) / 8 + 5);
    std::this_thread::sleep_for(std::chrono::microseconds(us));
}

void Node::Impl::start_progress() {
    progress = std::thread([this] { progress_loop(); });
}

void Node::Impl::stop_progress() {
    stop = true;
    if (progress.joinable()) {
        progress.join();
    }
}

void Node::Impl::progress_loop() {
    Backoff backoff(net.get(), doze, batch_pollers);
    while (!stop.load(std::memory_order_relaxed)) {
        Incoming in;
        auto got = net->poll(in);
        if (!got) {
            std::lock_guard lock(mu);
            progress_error = got.error();
            cv.notify_all();
            return;
        }
        if (!*got) {
            backoff.idle();
            continue;
        }
        backoff.reset();
        if (in.header.kind == static_cast<std::uint8_t>(wire::Kind::ping)) {
            wire::Header p;
            p.kind = static_cast<std::uint8_t>(wire::Kind::pong);
            (void)net->post(in.source, p);
            continue;
        }
        std::lock_guard lock(mu);
        client_handle(in);
        cv.notify_all();
    }
}

Result<void> Node::Impl::own_bytes(CacheChunk& c, bool keep) {
    if (c.wire && c.wire.use_count() != 1) {
        (void)net->release_shared();  // same-node readers that are done let go of it
    }
    if (!c.wire || c.wire.use_count() == 1) {
        return {};  // sends only ever let go of it meanwhile: a count of 1 stays 1
    }
    std::shared_ptr<net::Bytes> next;
    if (c.spare && c.spare.use_count() == 1 && c.spare->size() == c.wire->size()) {
        next = std::move(c.spare);  // its send is done: no new pages to fault in
    } else {
        try {
            next = net->buffer(c.wire->size());
        } catch (const std::bad_alloc&) {
            return make_error(Errc::out_of_memory,
                              "dsm: a second buffer for a chunk of {} bytes still being sent: out of memory", c.size);
        }
    }
    if (keep) {
        std::memcpy(next->data(), c.wire->data(), c.wire->size());
    }
    c.spare = std::exchange(c.wire, std::move(next));
    return {};
}

Result<void> Node::Impl::post_bytes(int dest, ChunkId id, CacheChunk& c, const proto::Message& o) {
    const wire::Header h = wire::to_header(o, id, c.size);
    // The same header for every target of a release (a notify's names no client): sent again as it is.
    if (std::memcmp(c.wire->data(), &h, sizeof h) != 0) {
        if (auto r = own_bytes(c); !r) {
            return r;
        }
        std::memcpy(c.wire->data(), &h, sizeof h);
    }
    return net->post_buffer(dest, c.wire);
}

Result<void> Node::Impl::client_send(ChunkId id, CacheChunk& c, const proto::Step& st) {
    for (const auto& o : st.out) {
        if (o.has_data && options.replication) {
            sent_data[id] = Sent{.home = c.home, .version = o.version};  // reported if the home dies
        }
        if (o.kind == proto::Msg::notify) {
            // Direct path: to a subscriber. Its death is the home's business (it recalls this
            // copy and names new targets); the writer's release does not fail on it.
            const int dest = rank_of_client(o.client);
            proto::Message n = o;
            n.client = -1;
            if (!net->is_dead(dest)) {
                (void)post_bytes(dest, id, c, n);
            }
            continue;
        }
        auto r =
            o.has_data ? post_bytes(via(c.home), id, c, o) : net->post(via(c.home), wire::to_header(o, id, c.size));
        if (!r) {
            return r;
        }
    }
    return {};
}

void Node::Impl::hand_on(std::vector<Notification> ready) {
    for (auto& n : ready) {
        notes.push_back(std::move(n));
    }
}

void Node::Impl::take_notification(Notification n) {
    if (!direct_path()) {
        notes.push_back(std::move(n));
        return;
    }
    auto it = notify_order.find(n.chunk);
    if (it == notify_order.end()) {
        return;  // a direct notify for a chunk this client left: its writer's grant predates that
    }
    const std::uint64_t version = n.version;
    hand_on(it->second.offer(version, std::move(n)));
}

void Node::Impl::client_take_subscription_news(Incoming& in, const proto::Message& m) {
    const ChunkId id = in.header.chunk;
    if (m.kind == proto::Msg::notify) {
        Notification n{.chunk = id, .version = m.version, .has_data = m.has_data};
        if (m.has_data) {
            n.bytes_ = in.payload();
            n.storage_ = in.view_keep ? std::move(in.view_keep) : std::shared_ptr<const void>(std::move(in.buffer));
        }
        take_notification(std::move(n));
        return;
    }
    waits[{static_cast<int>(proto::Msg::subscribe), id}].done = true;
    if (auto o = notify_order.find(id); o != notify_order.end()) {
        hand_on(o->second.subscribed(m.version));
    }
}

void Node::Impl::took_own_release(ChunkId id, std::uint64_t version) {
    if (auto it = notify_order.find(id); it != notify_order.end()) {
        hand_on(it->second.own_release(version));
    }
}

void Node::Impl::client_take_error(const Incoming& in) {
    const ChunkId id = in.header.chunk;
    Error err{static_cast<Errc>(in.header.code),
              std::string(reinterpret_cast<const char*>(in.payload().data()), in.payload().size()), 0};
    const int for_kind = in.header.grant;
    if (for_kind == static_cast<int>(proto::Msg::read_req) || for_kind == static_cast<int>(proto::Msg::write_req)) {
        if (auto it = cache.find(id); it != cache.end()) {
            it->second.failed = err;
        }
        return;
    }
    Pending& p = waits[{for_kind, id}];
    p.done = true;
    p.error = err;
}

// Called by the progress thread with mu held.
void Node::Impl::client_handle(Incoming& in) {
    using wire::Kind;
    const ChunkId id = in.header.chunk;
    const auto kind = static_cast<Kind>(in.header.kind);
    if (kind == Kind::pong) {
        return;
    }
    if (kind == Kind::dead) {
        take_dead_notice(in);
        return;
    }
    if (in.source < servers && failed(in.source)) {
        return;  // a dead home's last words: this client reported its state without them
    }
    if (kind == Kind::recover) {
        if (in.source < servers && in.header.code < static_cast<std::uint32_t>(servers)) {
            (void)fail_over(static_cast<int>(in.header.code));
        }
        return;
    }
    if (kind == Kind::error) {
        client_take_error(in);
        return;
    }
    if (kind == Kind::alloc_ack || kind == Kind::lock_grant) {
        const std::uint64_t key = kind == Kind::lock_grant ? in.header.code : id;
        const int k = kind == Kind::alloc_ack ? static_cast<int>(Kind::alloc_req) : static_cast<int>(Kind::lock_req);
        waits[{k, key}].done = true;
        if (kind == Kind::lock_grant) {
            // Held from now on (not when lock() returns): a fail-over meanwhile reports it.
            locks_held.insert(static_cast<std::uint32_t>(key));
        }
        return;
    }
    const auto decoded = wire::decode(in.header, clients, client_index());
    if (!decoded) {
        if (auto it = cache.find(id); it != cache.end()) {
            it->second.failed =
                Error{Errc::corrupted, fmt::format("chunk {:#x}: from rank {}: {}", id, in.source, decoded.error()), 0};
        }
        return;
    }
    const proto::Message& m = *decoded;
    if (in.source >= servers && m.kind != proto::Msg::notify) {
        return;  // another client sends a client nothing but the direct path's notify
    }
    if (m.kind == proto::Msg::notify || m.kind == proto::Msg::sub_ack) {
        client_take_subscription_news(in, m);
        return;
    }
    auto it = cache.find(id);
    if (it == cache.end()) {
        if (m.kind == proto::Msg::freed) {
            waits[{static_cast<int>(proto::Msg::free_req), id}].done = true;
            subscriptions.erase(id);
            notify_order.erase(id);
            sent_data.erase(id);
            return;
        }
        // inv/recall for a chunk this client dropped: answer as a client in I.
        it = cache.emplace(id, CacheChunk{.home = in.source}).first;
    }
    CacheChunk& c = it->second;
    c.home = in.source;  // first touch: the home answers, not the locator
    const proto::Step st = proto::client_receive(c.entry, m);
    if (!st.ok) {
        c.failed =
            Error{Errc::internal,
                  fmt::format("chunk {:#x}: protocol violation at client {}: {}", id, client_index(), st.error), 0};
        return;
    }
    if (st.install) {
        if (in.payload().size() != in.header.size) {
            c.failed = Error{Errc::corrupted,
                             fmt::format("chunk {:#x}: from rank {}: a grant of {} bytes carries {}", id, in.source,
                                         in.header.size, in.payload().size()),
                             0};
            return;
        }
        c.wire = std::move(in.buffer);  // the received message is the chunk's buffer: no copy
        c.size = in.header.size;
    }
    (void)client_send(id, c, st);
    if (m.kind == proto::Msg::freed) {
        waits[{static_cast<int>(proto::Msg::free_req), id}].done = true;
        subscriptions.erase(id);
        notify_order.erase(id);
        sent_data.erase(id);
    }
    if (st.erase) {
        cache.erase(it);
    }
}

template <class Pred>
Result<void> Node::Impl::wait_for_peer(std::unique_lock<std::mutex>& lock, int rank, std::string_view what, Pred pred) {
    // The request went through the super-peer (if any) and the answer comes
    // from `rank`: either one's death ends the wait, unless the dead one was a
    // server whose keeper takes over (replication), which answers from then on.
    while (!pred()) {
        if (progress_error) {
            return std::unexpected(*progress_error);
        }
        const int answers = rank < servers ? route(rank) : rank;
        const std::array<int, 2> peers{answers, super_peer() != answers ? super_peer() : -1};
        bool moved = false;
        for (const int peer : peers) {
            if (peer >= 0 && !net->check_alive(peer, options.heartbeat, options.timeout)) {
                if (peer < servers && options.replication && fail_over(peer)) {
                    moved = true;
                    break;
                }
                net->mark_dead(peer);
                return std::unexpected(peer_lost(lock, peer, what,
                                                 fmt::format("rank {} (node {}) stopped answering for {} ms", peer,
                                                             node_of(peer), options.timeout.count())));
            }
        }
        if (!moved) {
            cv.wait_for(lock, options.heartbeat / 4);
        }
    }
    return {};
}

void Node::Impl::take_dead_notice(const Incoming& in) {
    const auto rank = static_cast<int>(in.header.code);
    if (rank < 0 || rank >= servers + clients || rank == net->rank()) {
        return;  // not another rank of this job: nothing to name
    }
    const auto payload = in.payload();
    std::string error(reinterpret_cast<const char*>(payload.data()), payload.size());
    if (error.find("(found by rank ") == std::string::npos) {
        error += fmt::format(" (found by rank {})", in.source);
    }
    if (!told) {
        told = Told{.rank = rank, .error = error};
    }
    // A client tells only once it gave up its own call; on a client's death it
    // gave up the barriers too, which never complete now. (A server's death
    // leaves the clients' barriers whole.)
    if (in.source >= servers && rank >= servers && !barrier_broken) {
        barrier_broken = error;
    }
}

void Node::Impl::post_dead_notice(int dead, std::string_view why) {
    wire::Header h;
    h.kind = static_cast<std::uint8_t>(wire::Kind::dead);
    h.code = static_cast<std::uint32_t>(dead);
    const std::span<const std::byte> payload(reinterpret_cast<const std::byte*>(why.data()), why.size());
    for (int c = 0; c < clients; ++c) {
        const int r = rank_of_client(c);
        const bool gone = !client_left.empty() && client_left[static_cast<std::size_t>(c)];
        if (r != net->rank() && !net->is_dead(r) && !gone) {
            (void)net->post(r, h, payload);
        }
    }
}

Error Node::Impl::peer_lost(std::unique_lock<std::mutex>& lock, int rank, std::string_view what, std::string error) {
    // The peer may have ended because it failed on an earlier death, which it
    // told this client of just before: its notice is given a moment to come.
    const auto until = std::chrono::steady_clock::now() + std::min(options.heartbeat, std::chrono::milliseconds(200));
    while (!told && cv.wait_until(lock, until) != std::cv_status::timeout) {
    }
    if (!told) {
        told = Told{.rank = rank, .error = std::move(error)};
    }
    const Told cause = *told;
    if (!announced) {
        announced = true;
        post_dead_notice(cause.rank, cause.error);
        // Sent before the caller fails (and maybe exits at once); without mu,
        // which the progress thread needs.
        lock.unlock();
        net->flush(options.heartbeat);
        lock.lock();
    }
    return Error{Errc::peer_dead, fmt::format("{}: {}", what, cause.error), 0};
}

Result<void> Node::Impl::check_chunk_id(std::string_view op, ChunkId id) const {
    if (is_server()) {
        return make_error(Errc::invalid_argument, "{}: rank {} is a server; chunks are used by clients", op,
                          net->rank());
    }
    if (wire::id_counter(id) == 0 || wire::id_server(id) >= servers || wire::id_policy(id) > wire::kPolicyNode) {
        return make_error(Errc::invalid_argument, "{}: chunk={:#x}: not a chunk id of this DSM ({} servers)", op, id,
                          servers);
    }
    return {};
}

Result<CacheChunk*> Node::Impl::acquire(std::string_view op, ChunkId id, Access access) {
    const bool write = access != Access::read;
    if (auto r = check_chunk_id(op, id); !r) {
        return std::unexpected(r.error());
    }
    std::unique_lock lock(mu);
    auto it = cache.find(id);
    if (it == cache.end()) {
        it = cache.emplace(id, CacheChunk{.home = route(wire::id_server(id))}).first;
    }
    // Other threads of this node: wait for a compatible moment.
    const auto may_start = [&] {
        auto f = cache.find(id);
        if (f == cache.end()) {
            return true;
        }
        const auto& e = f->second.entry;
        return !e.waiting() && !e.has_deferred && !e.writer && (!write || e.readers == 0);
    };
    const std::string what = fmt::format("{}: chunk={:#x}", op, id);
    if (auto r = wait_for_peer(lock, cache.at(id).home, what, may_start); !r) {
        return std::unexpected(r.error());
    }
    it = cache.find(id);
    if (it == cache.end()) {
        it = cache.emplace(id, CacheChunk{.home = route(wire::id_server(id))}).first;
    }
    CacheChunk& c = it->second;
    c.failed.reset();
    const proto::Step st = proto::client_receive(
        c.entry,
        {.kind = write ? proto::Msg::op_acquire_write : proto::Msg::op_acquire_read, .client = client_index()});
    if (!st.ok) {
        return make_error(Errc::internal, "{}: {}", what, st.error);
    }
    if (auto r = client_send(id, c, st); !r) {
        c.entry.pending = proto::Msg::op_evict;
        return std::unexpected(r.error());
    }
    if (st.hit) {
        return writable_if(access, c);
    }
    auto done = wait_for_peer(lock, c.home, what, [&] { return !c.entry.waiting() || c.failed.has_value(); });
    if (!done || c.failed) {
        Error err = done ? *c.failed : done.error();
        c.entry.pending = proto::Msg::op_evict;  // no grant will be taken any more
        if (!c.entry.held() && !c.entry.has_bytes) {
            cache.erase(id);
        }
        if (done) {
            err.message = fmt::format("{}: {}", op, err.message);  // the home's reply names the chunk, not the call
        }
        return std::unexpected(err);
    }
    return writable_if(access, c);
}

Result<CacheChunk*> Node::Impl::writable_if(Access access, CacheChunk& c) {
    if (access != Access::read) {
        // A send of the last release may still be reading the buffer the writer is about to change.
        if (auto r = own_bytes(c, access == Access::write); !r) {
            c.entry.writer = false;  // not acquired after all; the copy stays valid
            return std::unexpected(r.error());
        }
    }
    return &c;
}

Result<void> Node::Impl::wait_reply(std::string_view op, int kind, std::uint64_t key, int rank) {
    std::unique_lock lock(mu);
    auto r = wait_for_peer(lock, rank, op, [&] { return waits[{kind, key}].done; });
    const Pending p = waits[{kind, key}];
    waits.erase({kind, key});
    if (!r) {
        return r;
    }
    if (p.error) {
        Error e = *p.error;
        e.message = fmt::format("{}: {}", op, e.message);
        return std::unexpected(e);
    }
    return {};
}

}  // namespace strata::dsm
