// SPDX-License-Identifier: MIT
// Home replication (Options::replication, docs/dsm.md "Replication"): every
// server copies what it keeps to its keeper (the next live server); when it
// dies, the keeper collects every client's copies and held locks, rebuilds
// the directory from them and its copies, and serves the dead server's
// chunks; the clients send their waiting requests there again.
//
// Why the clients' reports and not a replicated directory: the directory
// changes at every message, the data only at a store; a report of each
// client's own state (and bytes, when it holds any) is exact where a copy of
// the directory would lag by the messages in flight at the death.
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "dsm/node_impl.hpp"

namespace strata::dsm {
namespace {

std::uint64_t bit(int c) {
    return std::uint64_t{1} << static_cast<unsigned>(c);
}

wire::Header header_of(wire::Kind kind) {
    wire::Header h;
    h.kind = static_cast<std::uint8_t>(kind);
    return h;
}

}  // namespace

int Node::Impl::route(int server) const {
    int s = server;
    for (int hops = 0; hops < servers; ++hops) {
        const int next = route_to[static_cast<std::size_t>(s)].load(std::memory_order_acquire);
        if (next == s) {
            return s;
        }
        s = next;
    }
    return server;  // every server failed: the caller finds it dead
}

int Node::Impl::keeper(int server) const {
    if (!options.replication) {
        return -1;
    }
    const int k = route((server + 1) % servers);
    return k == server || failed(k) ? -1 : k;
}

// ---- the copying server -------------------------------------------------

void Node::Impl::replicate(wire::ReplicaKind kind, ChunkId id, std::uint64_t size, std::uint64_t version,
                           std::span<const std::byte> payload) {
    const int k = keeper(net->rank());
    if (k < 0 || net->is_dead(k)) {
        return;
    }
    wire::Header h = header_of(wire::Kind::replica);
    h.code = static_cast<std::uint32_t>(kind);
    h.chunk = id;
    h.size = size;
    h.version = version;
    h.flags = payload.empty() ? 0 : wire::kHasData;
    (void)net->post(k, h, payload);
}

void Node::Impl::replicate_chunk(ChunkId id, const HomeChunk& hc) {
    const bool zero = hc.entry.version == 0;  // never written: the keeper's copy starts zero-filled
    replicate(wire::ReplicaKind::chunk, id, hc.size, hc.entry.version,
              zero || !hc.data ? std::span<const std::byte>() : std::span<const std::byte>(hc.data->data(), hc.size));
    if (!hc.lost.empty()) {
        replicate(wire::ReplicaKind::lost, id, hc.size, 0, std::as_bytes(std::span(hc.lost.data(), hc.lost.size())));
    }
}

void Node::Impl::replicate_all() {
    for (const auto& [id, hc] : homes) {
        replicate_chunk(id, hc);
    }
    for (const auto& [id, loc] : located) {
        replicate(wire::ReplicaKind::located, id, loc.size, static_cast<std::uint64_t>(loc.home) + 1U);
    }
    for (const auto& [lid, l] : locks) {
        if (!l.broken.empty()) {
            replicate(wire::ReplicaKind::broken_lock, lid, 0, 0,
                      std::as_bytes(std::span(l.broken.data(), l.broken.size())));
        }
    }
}

// ---- the keeper ---------------------------------------------------------

void Node::Impl::server_take_replica(const Incoming& in) {
    ReplicaSet& set = replicas[in.source];
    const ChunkId id = in.header.chunk;
    const auto text = [&] {
        const auto p = in.payload();
        return std::string(reinterpret_cast<const char*>(p.data()), p.size());
    };
    switch (static_cast<wire::ReplicaKind>(in.header.code)) {
        case wire::ReplicaKind::chunk: {
            Replica& r = set.chunks[id];
            if (!r.data || r.size != in.header.size) {
                auto region = Region::memory(in.header.size);
                if (!region) {
                    // The copy is missing, not wrong: a take-over finds the chunk without data and marks it lost.
                    set.chunks.erase(id);
                    return;
                }
                r.data = std::move(*region);
                r.size = in.header.size;
            }
            r.version = in.header.version;
            const auto p = in.payload();
            if (!p.empty()) {
                std::memcpy(r.data->data(), p.data(), std::min(p.size(), r.size));
            }
            break;
        }
        case wire::ReplicaKind::freed:
            set.chunks.erase(id);
            set.located.erase(id);
            set.freed.insert(id);
            break;
        case wire::ReplicaKind::lost:
            if (auto it = set.chunks.find(id); it != set.chunks.end()) {
                it->second.lost = text();
            }
            break;
        case wire::ReplicaKind::located:
            set.located[id] = {in.header.size, static_cast<int>(in.header.version) - 1};
            break;
        case wire::ReplicaKind::broken_lock: set.broken_locks[static_cast<std::uint32_t>(id)] = text(); break;
    }
}

// A server found dead (by this one, or by its keeper's recover): its requests go to its keeper
// from now on; if it was this server's own keeper, everything kept here is copied to the next.
void Node::Impl::server_learn_failure(int server) {
    if (server < 0 || server >= servers || server == net->rank() || failed(server)) {
        return;
    }
    const int keeper_before = keeper(net->rank());
    route_to[static_cast<std::size_t>(server)].store((server + 1) % servers, std::memory_order_release);
    net->mark_dead(server);
    const int keeper_now = keeper(net->rank());
    if (keeper_now >= 0 && keeper_now != keeper_before) {
        replicate_all();
    }
}

void Node::Impl::start_recovery(int dead) {
    if (dead < 0 || dead >= servers || dead == net->rank() || failed(dead) || keeper(dead) != net->rank()) {
        return;
    }
    wire::Header h = header_of(wire::Kind::recover);
    h.code = static_cast<std::uint32_t>(dead);
    // The dead server first, best effort: if it only looked dead, it stops serving.
    (void)net->post(dead, h);
    server_learn_failure(dead);
    Recovery& r = recoveries[dead];
    r.due.assign(static_cast<std::size_t>(clients), false);
    for (int c = 0; c < clients; ++c) {
        const auto i = static_cast<std::size_t>(c);
        if (!client_left[i] && !client_dead[i]) {
            r.due[i] = true;
            (void)net->post(rank_of_client(c), h);
        }
    }
    for (int s = 0; s < servers; ++s) {  // the other servers route there too
        if (s != net->rank() && !net->is_dead(s)) {
            (void)net->post(s, h);
        }
    }
    finish_recoveries();
}

void Node::Impl::server_take_report(const Incoming& in) {
    const auto dead = static_cast<int>(in.header.code);
    if (!recoveries.contains(dead)) {
        start_recovery(dead);  // a client found it dead first
    }
    auto it = recoveries.find(dead);
    if (it == recoveries.end()) {
        return;  // a report after the take-over, or about a server this one does not keep: nothing to rebuild
    }
    Recovery& r = it->second;
    const int client = in.source - servers;
    switch (static_cast<wire::Kind>(in.header.kind)) {
        case wire::Kind::report:
            r.chunks[in.header.chunk].push_back(Report{
                .client = client,
                .state = static_cast<proto::CState>(std::min<std::uint8_t>(in.header.grant, 3)),
                .version = in.header.version,
                .size = in.header.size,
                .publish = (in.header.flags & wire::kPublish) != 0,
                .subscribed = (in.header.flags & wire::kSubscribed) != 0,
                .update = (in.header.flags & wire::kUpdate) != 0,
                // Bytes count only when they are the chunk's whole size (a short message is no copy).
                .data = (in.header.flags & wire::kHasData) != 0 && in.payload().size() == in.header.size ? in.buffer
                                                                                                         : nullptr,
            });
            break;
        case wire::Kind::report_lock:
            r.locks.emplace_back(static_cast<std::uint32_t>(in.header.chunk), in.source);
            break;
        default:  // report_done
            r.due[static_cast<std::size_t>(client)] = false;
            finish_recoveries();
            break;
    }
}

void Node::Impl::finish_recoveries() {
    for (auto it = recoveries.begin(); it != recoveries.end();) {
        bool waiting = false;
        for (int c = 0; c < clients; ++c) {
            const auto i = static_cast<std::size_t>(c);
            waiting = waiting || (it->second.due[i] && !client_left[i] && !client_dead[i]);
        }
        if (waiting) {
            ++it;
            continue;
        }
        take_over(it->first, it->second);
        it = recoveries.erase(it);
    }
    if (recoveries.empty()) {
        std::deque<Incoming> replay;
        replay.swap(held_back);
        for (auto& in : replay) {
            server_handle(in);
        }
    }
}

namespace {

// A dead server's chunk at its keeper: the newest bytes of its copy and the clients' reports. A
// version that was sent to the dead server and reached neither the copy nor a client makes it lost,
// and it says so. Nothing: no size is known (the clients' requests find it unknown).
std::optional<HomeChunk> newest_bytes(ChunkId id, const std::string& who, Node::Impl::Replica* copy,
                                      const std::vector<Node::Impl::Report>& reports) {
    std::size_t size = copy != nullptr ? copy->size : 0;
    std::uint64_t best = copy != nullptr ? copy->version : 0;
    std::uint64_t newest = best;
    const Node::Impl::Report* from = nullptr;  // the report whose bytes win, if any
    for (const auto& rep : reports) {
        newest = std::max(newest, rep.version);
        size = size != 0 ? size : rep.size;
        if (rep.data && rep.size == size && (rep.version > best || (copy == nullptr && from == nullptr))) {
            best = rep.version;
            from = &rep;
        }
    }
    if (size == 0) {
        return std::nullopt;
    }
    HomeChunk hc{.size = size};
    hc.entry.version = best;
    if (copy != nullptr && from == nullptr && copy->data) {
        hc.data = std::move(copy->data);
    } else if (auto region = Region::memory(size); !region) {
        hc.lost = fmt::format("chunk {:#x} is broken: its home {} died and its keeper cannot allocate {} bytes: {}", id,
                              who, size, region.error().message);
    } else {
        hc.data = std::move(*region);
        if (from != nullptr) {
            std::memcpy(hc.data->data(), from->data->data() + sizeof(wire::Header), size);
        }
    }
    if (copy != nullptr && !copy->lost.empty()) {
        hc.lost = copy->lost;
    } else if (hc.lost.empty() && (best < newest || (copy == nullptr && from == nullptr))) {
        hc.lost = fmt::format(
            "chunk {:#x} is broken: its home {} died before its version {} reached the home's keeper or any "
            "client (the newest found is {}); every request for this chunk fails: allocate a new chunk in its "
            "place",
            id, who, newest, best);
    }
    return hc;
}

// Its directory entry: what the live clients reported holding.
void rebuild_entry(HomeChunk& hc, ChunkId id, const std::string& who, const std::vector<Node::Impl::Report>& reports,
                   const std::vector<bool>& gone) {
    proto::HomeEntry& e = hc.entry;
    for (const auto& rep : reports) {
        if (gone[static_cast<std::size_t>(rep.client)]) {
            continue;  // its bytes were taken; its copy is gone
        }
        if (rep.subscribed) {
            e.subs |= bit(rep.client);
            e.subs_update |= rep.update ? bit(rep.client) : 0;
        }
        if (rep.state == proto::CState::E || rep.state == proto::CState::M) {
            e.owner = rep.client;
            e.owner_publishes = rep.publish;
        } else if (rep.state == proto::CState::S) {
            e.sharers |= bit(rep.client);
        }
    }
    if (e.owner >= 0 && e.sharers != 0 && hc.lost.empty()) {
        hc.lost = fmt::format(
            "chunk {:#x} is broken: after its home {} died, client {} reported it as owner while "
            "others share it",
            id, who, e.owner);
    }
    e.state = e.owner >= 0 ? proto::DState::EM : (e.sharers != 0 ? proto::DState::S : proto::DState::U);
    if (!hc.lost.empty()) {
        e = proto::HomeEntry{};
    }
}

}  // namespace

// The dead server's chunks, first-touch locations and locks become this server's, and are copied
// on to this server's own keeper.
void Node::Impl::take_over(int dead, Recovery& r) {
    ReplicaSet set = std::move(replicas[dead]);
    replicas.erase(dead);
    std::vector<ChunkId> ids;
    ids.reserve(set.chunks.size() + r.chunks.size());
    for (const auto& [id, rep] : set.chunks) {
        ids.push_back(id);
    }
    for (const auto& [id, reports] : r.chunks) {
        if (!set.chunks.contains(id) && !set.freed.contains(id)) {
            ids.push_back(id);
        }
    }
    std::vector<bool> gone(static_cast<std::size_t>(clients));
    for (std::size_t c = 0; c < gone.size(); ++c) {
        gone[c] = client_dead[c] || client_left[c];
    }
    const std::string who = fmt::format("rank {} (node {})", dead, node_of(dead));
    for (const ChunkId id : ids) {
        auto copy = set.chunks.find(id);
        auto hc = newest_bytes(id, who, copy != set.chunks.end() ? &copy->second : nullptr, r.chunks[id]);
        if (!hc) {
            continue;
        }
        rebuild_entry(*hc, id, who, r.chunks[id], gone);
        homes[id] = std::move(*hc);
        replicate_chunk(id, homes[id]);
    }
    for (const auto& [id, loc] : set.located) {
        located[id] = Located{.size = loc.first, .home = loc.second};
        replicate(wire::ReplicaKind::located, id, loc.first, static_cast<std::uint64_t>(loc.second) + 1U);
    }
    for (const auto& [lid, why] : set.broken_locks) {
        locks[lid].broken = why;
        replicate(wire::ReplicaKind::broken_lock, lid, 0, 0, std::as_bytes(std::span(why.data(), why.size())));
    }
    for (const auto& [lid, holder] : r.locks) {
        LockState& l = locks[lid];
        if (l.broken.empty() && l.holder < 0) {
            l.holder = holder;
        }
    }
    freed_ids.insert(set.freed.begin(), set.freed.end());
}

void Node::Impl::server_watch_primaries() {
    for (int s = 0; s < servers; ++s) {
        if (s != net->rank() && !failed(s) && keeper(s) == net->rank() &&
            !net->check_alive(s, options.heartbeat, options.timeout)) {
            start_recovery(s);
        }
    }
}

bool Node::Impl::server_replication_handle(Incoming& in) {
    using wire::Kind;
    const auto kind = static_cast<Kind>(in.header.kind);
    if (in.source < servers && failed(in.source)) {
        // A dead server's last copies still count until its chunks are taken over; nothing else does.
        if (kind == Kind::replica && recoveries.contains(in.source)) {
            server_take_replica(in);
        }
        return true;
    }
    switch (kind) {
        case Kind::replica: server_take_replica(in); return true;
        case Kind::recover: {
            const auto dead = static_cast<int>(in.header.code);
            if (dead == net->rank()) {
                deposed = Error{Errc::peer_dead,
                                fmt::format("dsm: server rank {} was found dead by rank {}, which serves its chunks "
                                            "now (it answered nothing for {} ms)",
                                            dead, in.source, options.timeout.count()),
                                0};
            } else {
                server_learn_failure(dead);
            }
            return true;
        }
        case Kind::report:
        case Kind::report_lock:
        case Kind::report_done: server_take_report(in); return true;
        case Kind::ping:
        case Kind::pong:
        case Kind::bye: return false;
        default: break;
    }
    if (!recoveries.empty()) {
        held_back.push_back(std::move(in));
        return true;
    }
    return false;
}

// ---- the client ---------------------------------------------------------

// One chunk of dead server `dead`, as this client has it (c: null when it holds none), to its keeper.
void Node::Impl::report_to_keeper(int dead, int to, ChunkId id, const CacheChunk* c) {
    wire::Header h = header_of(wire::Kind::report);
    h.code = static_cast<std::uint32_t>(dead);
    h.client = client_index();
    h.chunk = id;
    std::uint64_t version = 0;
    std::span<const std::byte> bytes;
    if (c != nullptr) {
        h.grant = static_cast<std::uint8_t>(c->entry.state);
        h.size = c->size;
        if (c->entry.publish) {
            h.flags |= wire::kPublish;
        }
        if (c->entry.has_bytes && c->wire) {
            version = c->entry.version;
            bytes = std::span<const std::byte>(c->bytes(), c->size);
        }
    }
    if (auto s = sent_data.find(id); s != sent_data.end() && s->second.version > version) {
        version = s->second.version;
        bytes = {};  // what it holds is older than what it sent: only the number is news
    }
    h.version = version;
    if (!bytes.empty()) {
        h.flags |= wire::kHasData;
    }
    if (auto s = subscriptions.find(id); s != subscriptions.end()) {
        h.flags |= wire::kSubscribed;
        if (s->second) {
            h.flags |= wire::kUpdate;
        }
    }
    (void)net->post(to, h, bytes);
}

bool Node::Impl::fail_over(int server) {
    if (failed(server)) {
        return route(server) != server && !net->is_dead(route(server));
    }
    // What the dead server served: its own chunks and locks, and those it had taken over.
    std::vector<bool> served(static_cast<std::size_t>(servers), false);
    for (int s = 0; s < servers; ++s) {
        served[static_cast<std::size_t>(s)] = route(s) == server;
    }
    route_to[static_cast<std::size_t>(server)].store((server + 1) % servers, std::memory_order_release);
    net->mark_dead(server);
    const int to = route(server);
    if (to == server || net->is_dead(to)) {
        return false;
    }
    std::vector<ChunkId> moved;
    for (auto& [id, c] : cache) {
        if (c.home != server) {
            continue;
        }
        c.home = to;
        moved.push_back(id);
        // An inv or recall that waited for a release belongs to the dead home's directory: the
        // keeper's rebuilt one sends its own when a request needs it.
        c.entry.has_deferred = false;
        report_to_keeper(server, to, id, &c);
    }
    const auto home_was = [&](ChunkId id, int home) {
        return home >= 0 ? home == server : served[static_cast<std::size_t>(wire::id_server(id))];
    };
    for (const auto& [id, update] : subscriptions) {
        if (!cache.contains(id) && home_was(id, -1)) {
            report_to_keeper(server, to, id, nullptr);
        }
    }
    for (const auto& [id, sent] : sent_data) {
        if (!cache.contains(id) && !subscriptions.contains(id) && home_was(id, sent.home)) {
            report_to_keeper(server, to, id, nullptr);
        }
    }
    for (const std::uint32_t lid : locks_held) {
        if (served[lid % static_cast<std::uint32_t>(servers)]) {
            wire::Header h = header_of(wire::Kind::report_lock);
            h.code = static_cast<std::uint32_t>(server);
            h.client = client_index();
            h.chunk = lid;
            (void)net->post(to, h);
        }
    }
    wire::Header done = header_of(wire::Kind::report_done);
    done.code = static_cast<std::uint32_t>(server);
    done.client = client_index();
    (void)net->post(to, done);
    resend_to_keeper(server, to, moved);
    return true;
}

// The requests dead server `dead` had not answered, to its keeper `to` (after the reports).
void Node::Impl::resend_to_keeper(int dead, int to, const std::vector<ChunkId>& moved) {
    for (const ChunkId id : moved) {
        const CacheChunk& c = cache.at(id);
        if (c.entry.waiting()) {
            const proto::Message m{
                .kind = c.entry.pending == proto::Msg::op_acquire_write ? proto::Msg::write_req : proto::Msg::read_req,
                .client = client_index(),
                .version = c.entry.version,
                .cached = c.entry.has_bytes};
            (void)net->post(to, wire::to_header(m, id, c.size));
        }
    }
    for (auto& [key, p] : waits) {
        if (!p.done && p.server == dead) {
            p.server = to;
            (void)net->post(to, p.sent);
        }
    }
}

}  // namespace strata::dsm
