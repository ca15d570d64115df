// SPDX-License-Identifier: MIT
// The server side of the DSM: homes (directory entries + home copies driven
// by the protocol table), first-touch location, global locks, and what
// happens to the chunks of a client that died.
#include <cstring>

#include <fmt/format.h>

#include "dsm/admission.hpp"
#include "dsm/node_impl.hpp"

namespace strata::dsm {
namespace {

std::uint64_t bit(int c) {
    return std::uint64_t{1} << static_cast<unsigned>(c);
}

}  // namespace

void Node::Impl::server_reply_error(int rank, int for_kind, ChunkId id, Errc code, const std::string& text) {
    wire::Header h;
    h.kind = static_cast<std::uint8_t>(wire::Kind::error);
    h.grant = static_cast<std::uint8_t>(for_kind);
    h.chunk = id;
    h.code = static_cast<std::uint32_t>(code);
    (void)net->post(rank, h, std::as_bytes(std::span(text.data(), text.size())));
}

Result<void> Node::Impl::serve() {
    client_left.assign(static_cast<std::size_t>(clients), false);
    client_dead.assign(static_cast<std::size_t>(clients), false);
    Backoff backoff(net.get(), doze, batch_pollers);
    auto next_watch = Clock::now();
    for (;;) {
        int gone = 0;
        for (int c = 0; c < clients; ++c) {
            gone += (client_left[static_cast<std::size_t>(c)] || client_dead[static_cast<std::size_t>(c)]) ? 1 : 0;
        }
        if (gone == clients) {
            break;
        }
        if (deposed) {
            return std::unexpected(*deposed);
        }
        Incoming in;
        auto got = net->poll(in);
        if (!got) {
            return std::unexpected(got.error());
        }
        if (*got) {
            server_handle(in);
            backoff.reset();
        } else {
            backoff.idle();
        }
        if (Clock::now() >= next_watch) {
            server_watch();
            server_watch_primaries();
            next_watch = Clock::now() + options.heartbeat / 2;
        }
    }
    net->flush(options.timeout);
    return {};
}

// Every client still in the job is watched: one silent for `timeout` (no
// message, no pong) is dead, whatever it was doing.
void Node::Impl::server_watch() {
    for (int c = 0; c < clients; ++c) {
        const auto i = static_cast<std::size_t>(c);
        if (client_left[i] || client_dead[i]) {
            continue;
        }
        if (!net->check_alive(rank_of_client(c), options.heartbeat, options.timeout)) {
            server_declare_dead(c);
        }
    }
}

void Node::Impl::server_declare_dead(int client) {
    const int rank = rank_of_client(client);
    client_dead[static_cast<std::size_t>(client)] = true;
    net->mark_dead(rank);
    // The other clients hear of it at once: whoever of them fails first on it
    // names it, not the survivor that ended before.
    post_dead_notice(rank, fmt::format("rank {} (client {}, node {}) stopped answering for {} ms", rank, client,
                                       node_of(rank), options.timeout.count()));
    server_forget_client(client,
                         fmt::format("rank {} (client {}, node {}), which stopped answering for {} ms", rank, client,
                                     node_of(rank), options.timeout.count()),
                         "died");
}

void Node::Impl::server_forget_client(int client, const std::string& why, std::string_view ended) {
    const int rank = rank_of_client(client);
    for (auto& [id, hc] : homes) {
        auto& e = hc.entry;
        if (e.state == proto::DState::EM && (e.owner_targets & bit(client)) != 0) {
            // A direct owner would go on sending its releases to the dead client: it is recalled,
            // as for an unsubscription, and the next grant names the living subscribers only.
            server_apply(id, hc, proto::Message{.kind = proto::Msg::unsubscribe, .client = client}, {});
        }
        e.subs &= ~bit(client);
        e.subs_update &= ~bit(client);
        std::erase_if(e.queue, [&](const proto::Request& r) { return r.client == client; });
        const bool owner = e.owner == client && (e.state == proto::DState::EM || e.state == proto::DState::wait_recall);
        if (owner && (!e.owner_publishes || e.owner_targets != 0) && hc.lost.empty()) {
            // Its copy may hold writes released since the home last saw the data (silently, or
            // sent to the subscribers only: the direct path).
            hc.lost = fmt::format(
                "chunk {:#x} is broken: its only up-to-date copy was on {}; the data is lost and "
                "every request for this chunk fails: allocate a new chunk in its place",
                id, why);
            replicate(wire::ReplicaKind::lost, id, hc.size, 0,
                      std::as_bytes(std::span(hc.lost.data(), hc.lost.size())));
        }
        // The rest is what the dead client would have said: acks, evictions, an empty recall answer.
        proto::Message m{.client = client};
        if (e.state == proto::DState::wait_acks && (e.awaiting & bit(client)) != 0) {
            m.kind = proto::Msg::inv_ack;
        } else if ((e.state == proto::DState::S || e.state == proto::DState::wait_acks) &&
                   (e.sharers & bit(client)) != 0) {  // NOLINT(bugprone-branch-clone): a sharer's, then an owner's
            m.kind = proto::Msg::evict;
        } else if (owner && e.state == proto::DState::wait_recall) {
            m.kind = proto::Msg::recall_ack;
        } else if (owner) {
            m.kind = proto::Msg::evict;
        } else {
            continue;
        }
        if (hc.lost.empty()) {
            server_apply(id, hc, m, {});
        } else {
            // Requests waiting for a lost chunk get the error now, later ones on arrival.
            if (e.state == proto::DState::wait_recall || e.state == proto::DState::wait_acks) {
                server_reply_error(rank_of_client(e.pending.client), static_cast<int>(e.pending.kind), id, Errc::broken,
                                   hc.lost);
            }
            for (const auto& r : e.queue) {
                server_reply_error(rank_of_client(r.client), static_cast<int>(r.kind), id, Errc::broken, hc.lost);
            }
            e = proto::HomeEntry{};
        }
    }
    for (auto& [lid, l] : locks) {
        std::erase(l.waiters, rank);
        if (l.holder == rank) {
            // What the lock guarded may be half-written, and a lock id cannot be reset while the DSM runs.
            l.broken = fmt::format(
                "lock {} is broken: its holder {}, {} holding it, so what it guarded may be "
                "half-written; use another lock id (a lock cannot be reset while the DSM runs)",
                lid, why, ended);
            for (int w : l.waiters) {
                server_reply_error(w, static_cast<int>(wire::Kind::lock_req), lid, Errc::broken, l.broken);
            }
            l.waiters.clear();
            l.holder = -1;
            replicate(wire::ReplicaKind::broken_lock, lid, 0, 0,
                      std::as_bytes(std::span(l.broken.data(), l.broken.size())));
        }
    }
    finish_recoveries();  // a recovery no longer waits for this client's reports
}

void Node::Impl::server_apply(ChunkId id, HomeChunk& hc, const proto::Message& m, std::span<const std::byte> payload,
                              const std::shared_ptr<net::Bytes>& incoming) {
    const proto::Step st = proto::home_receive(hc.entry, m);
    if (!st.ok) {
        server_reply_error(rank_of_client(m.client), static_cast<int>(m.kind), id, Errc::internal,
                           fmt::format("chunk {:#x}: protocol violation at the home: {}", id, st.error));
        return;
    }
    if (st.store) {
        if (payload.size() != hc.size) {
            server_reply_error(rank_of_client(m.client), static_cast<int>(m.kind), id, Errc::internal,
                               fmt::format("chunk {:#x}: {} carries {} bytes, the chunk has {}", id,
                                           proto::to_string(m.kind), payload.size(), hc.size));
            return;
        }
        std::memcpy(hc.data->data(), payload.data(), payload.size());
        // The keeper has each version before any client is told of it.
        replicate(wire::ReplicaKind::chunk, id, hc.size, hc.entry.version, payload);
    }
    // Notifies with data carry exactly the bytes that came in: the incoming
    // buffer goes out again under a notify header, without a copy.
    std::shared_ptr<net::Bytes> forward;
    for (const auto& o : st.out) {
        const int dest = rank_of_client(o.client);
        if (net->is_dead(dest)) {
            continue;
        }
        if (o.kind == proto::Msg::notify && o.has_data && st.store && incoming) {
            if (!forward) {
                forward = incoming;
                proto::Message n = o;
                n.client = -1;  // one header for every subscriber: a notify's receiver ignores it
                const wire::Header h = wire::to_header(n, id, hc.size);
                std::memcpy(forward->data(), &h, sizeof(h));
            }
            (void)net->post_buffer(dest, forward);
            continue;
        }
        std::span<const std::byte> bytes;
        if (o.has_data) {
            bytes = std::span<const std::byte>(hc.data->data(), hc.size);
        }
        (void)net->post(dest, wire::to_header(o, id, hc.size), bytes);
    }
    // A grant to a client that died meanwhile: it never wrote, the home copy is current.
    if (hc.entry.state == proto::DState::EM && net->is_dead(rank_of_client(hc.entry.owner))) {
        hc.entry.state = proto::DState::U;
        hc.entry.owner = -1;
    }
    if (st.erase) {
        homes.erase(id);
        replicate(wire::ReplicaKind::freed, id, 0, 0);
    }
}

void Node::Impl::server_protocol(Incoming& in) {
    const ChunkId id = in.header.chunk;
    const auto decoded = wire::decode(in.header, clients, wire::kAtHome);
    if (!decoded) {
        server_reply_error(requester(in), in.header.kind, id, Errc::corrupted,
                           fmt::format("chunk {:#x}: from rank {}: {}", id, in.source, decoded.error()));
        return;
    }
    const proto::Message& m = *decoded;
    auto it = homes.find(id);
    if (it == homes.end()) {
        auto loc = located.find(id);
        if (loc != located.end()) {
            // First touch: the toucher's nearest server becomes the home.
            if (loc->second.home < 0) {
                loc->second.home =
                    route(super_peers.empty() ? m.client % servers : super_peers[static_cast<std::size_t>(m.client)]);
                replicate(wire::ReplicaKind::located, id, loc->second.size,
                          static_cast<std::uint64_t>(loc->second.home) + 1U);
                if (loc->second.home != net->rank()) {
                    wire::Header a;
                    a.kind = static_cast<std::uint8_t>(wire::Kind::adopt);
                    a.chunk = id;
                    a.size = loc->second.size;
                    (void)net->post(loc->second.home, a);
                } else {
                    auto region = Region::memory(loc->second.size);
                    if (!region) {
                        server_reply_error(requester(in), in.header.kind, id, region.error().code,
                                           region.error().message);
                        return;
                    }
                    homes[id] = HomeChunk{
                        .entry = {.direct = direct_path()}, .data = std::move(*region), .size = loc->second.size};
                    replicate_chunk(id, homes[id]);
                }
            }
            if (route(loc->second.home) != net->rank()) {
                (void)net->post_buffer(route(loc->second.home), in.buffer);
                return;
            }
            it = homes.find(id);
        }
    }
    if (it == homes.end()) {
        if (m.kind == proto::Msg::free_req && freed_ids.contains(id)) {
            // A free sent again to a dead home's keeper: the dead home had freed it.
            (void)net->post(rank_of_client(m.client),
                            wire::to_header({.kind = proto::Msg::freed, .client = m.client}, id, 0));
            return;
        }
        if (proto::to_home(m.kind) && m.kind != proto::Msg::inv_ack && m.kind != proto::Msg::recall_ack) {
            server_reply_error(rank_of_client(m.client), in.header.kind, id, Errc::not_found,
                               fmt::format("chunk={:#x}: unknown chunk (never allocated, or freed)", id));
        }
        return;
    }
    HomeChunk& hc = it->second;
    if (!hc.lost.empty()) {
        server_reply_error(rank_of_client(m.client), in.header.kind, id, Errc::broken, hc.lost);
        return;
    }
    server_apply(id, hc, m, in.payload(), in.buffer);
}

void Node::Impl::server_lock(Incoming& in) {
    const std::uint32_t lid = in.header.code;
    LockState& l = locks[lid];
    const int who = requester(in);
    wire::Header g;
    g.kind = static_cast<std::uint8_t>(wire::Kind::lock_grant);
    g.code = lid;
    if (in.header.kind == static_cast<std::uint8_t>(wire::Kind::lock_req)) {
        if (!l.broken.empty()) {
            server_reply_error(who, in.header.kind, lid, Errc::broken, l.broken);
        } else if (l.holder < 0) {
            l.holder = who;
            (void)net->post(who, g);
        } else {
            l.waiters.push_back(who);
        }
        return;
    }
    if (l.holder != who) {
        server_reply_error(who, in.header.kind, lid, Errc::invalid_argument,
                           fmt::format("unlock: lock={}: not held by rank {}", lid, who));
        return;
    }
    l.holder = -1;
    if (!l.waiters.empty()) {
        l.holder = l.waiters.front();
        l.waiters.pop_front();
        (void)net->post(l.holder, g);
    }
}

bool Node::Impl::server_pass_on(Incoming& in) {
    if (super_peers.empty() || in.source < servers) {
        return false;  // direct topology, or already passed on by a server: never twice
    }
    using wire::Kind;
    const auto kind = static_cast<Kind>(in.header.kind);
    int target = net->rank();
    if (in.header.kind < proto::kWireMsgCount) {
        const ChunkId id = in.header.chunk;
        // A first-touch chunk this server adopted, or locates, is served here whatever its id names.
        if (!homes.contains(id) && !located.contains(id)) {
            target = wire::id_server(id);
        }
    } else if (kind == Kind::alloc_req) {
        target = wire::id_server(in.header.chunk);
    } else if (kind == Kind::lock_req || kind == Kind::unlock) {
        target = static_cast<int>(in.header.code % static_cast<std::uint32_t>(servers));
    }
    if (target == net->rank() || target < 0 || target >= servers) {
        return false;  // served here (an id naming no server gets its error here)
    }
    // The receiver learns the client from the header: this server stamps the
    // sender's own index (a client only ever speaks for itself).
    in.header.client = in.source - servers;
    std::memcpy(in.buffer->data(), &in.header, sizeof(in.header));
    (void)net->post_buffer(target, in.buffer);
    return true;
}

void Node::Impl::server_handle(Incoming& in) {
    using wire::Kind;
    const auto kind = static_cast<Kind>(in.header.kind);
    const std::string refused = wire::refusal(in.header.kind, in.source, in.header.client,
                                              {.servers = servers, .clients = clients, .self = net->rank()});
    if (!refused.empty()) {
        // A client hears why its request failed; a server is never answered (two servers refusing
        // each other's error replies would never stop).
        const bool client = in.source >= servers && in.source < servers + clients;
        if (client && kind != Kind::error) {
            server_reply_error(in.source, in.header.kind, in.header.chunk, Errc::permission_denied,
                               fmt::format("dsm: refused: {}", refused));
        }
        return;
    }
    if (server_replication_handle(in)) {
        return;
    }
    if (server_pass_on(in)) {
        return;
    }
    if (in.header.kind < proto::kWireMsgCount) {
        server_protocol(in);
        return;
    }
    switch (kind) {
        case Kind::ping: {
            wire::Header p;
            p.kind = static_cast<std::uint8_t>(Kind::pong);
            (void)net->post(in.source, p);
            break;
        }
        case Kind::pong: break;
        case Kind::bye: {
            const int client = in.source - servers;
            if (in.header.code != 0) {
                // It left after a failed barrier: the others may go on, so what only it held is lost
                // (its requests answered as a dead client's) rather than waited for.
                server_forget_client(client,
                                     fmt::format("rank {} (client {}, node {}), which left after a failed barrier",
                                                 in.source, client, node_of(in.source)),
                                     "left");
            }
            client_left[static_cast<std::size_t>(client)] = true;
            finish_recoveries();
            break;
        }
        case Kind::lock_req:
        case Kind::unlock: server_lock(in); break;
        case Kind::alloc_req:
        case Kind::adopt: {
            const ChunkId id = in.header.chunk;
            if (homes.contains(id) || located.contains(id)) {
                // Sent again to a dead home's keeper, which has it from the copy: only the answer was lost.
            } else if (kind == Kind::alloc_req && wire::id_policy(id) == wire::kPolicyFirstTouch) {
                located[id] = Located{.size = in.header.size};
                replicate(wire::ReplicaKind::located, id, in.header.size, 0);
            } else {
                auto region = Region::memory(in.header.size);
                if (!region) {
                    server_reply_error(requester(in), in.header.kind, id, region.error().code,
                                       fmt::format("allocate: size={}: {}", in.header.size, region.error().message));
                    return;
                }
                homes[id] =
                    HomeChunk{.entry = {.direct = direct_path()}, .data = std::move(*region), .size = in.header.size};
                replicate_chunk(id, homes[id]);
            }
            if (kind == Kind::alloc_req) {
                wire::Header a;
                a.kind = static_cast<std::uint8_t>(Kind::alloc_ack);
                a.chunk = id;
                a.size = in.header.size;
                (void)net->post(requester(in), a);
            }
            break;
        }
        default:
            server_reply_error(in.source, in.header.kind, in.header.chunk, Errc::internal,
                               fmt::format("a server cannot take a {} message", wire::kind_name(in.header.kind)));
    }
}

}  // namespace strata::dsm
