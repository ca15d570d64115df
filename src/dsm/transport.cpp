// SPDX-License-Identifier: MIT
// MPI two-sided transport of the DSM (see transport.hpp).
#include "dsm/transport.hpp"

#include <cstdio>
#include <cstring>
#include <map>
#include <new>
#include <thread>
#include <tuple>

#include <fmt/format.h>
#include <unistd.h>

namespace strata::dsm {
namespace wire {

Header to_header(const proto::Message& m, std::uint64_t chunk, std::uint64_t size) {
    Header h;
    h.kind = static_cast<std::uint8_t>(m.kind);
    h.grant = static_cast<std::uint8_t>(m.grant);
    h.flags =
        static_cast<std::uint8_t>((m.has_data ? kHasData : 0) | (m.cached ? kCached : 0) | (m.publish ? kPublish : 0) |
                                  (m.update ? kUpdate : 0) | (m.kept_copy ? kKept : 0));
    h.client = m.client;
    h.targets = m.targets;
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
                          .kept_copy = (h.flags & kKept) != 0,
                          .targets = h.targets};
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
    wire::Header ping;
    ping.kind = static_cast<std::uint8_t>(wire::Kind::ping);
    const auto* bytes = reinterpret_cast<const std::byte*>(&ping);
    auto channel = net::MpiChannel::create(
        comm, {.tag = wire::kTag, .kinds = wire::kKinds, .who = "dsm", .ping = {bytes, bytes + sizeof ping}});
    if (!channel) {
        return std::unexpected(channel.error());
    }
    return std::unique_ptr<Transport>(new Transport(std::move(*channel)));
}

Transport::Transport(std::unique_ptr<net::MpiChannel> channel)
    : channel_(std::move(channel)),
      shared_msgs_(static_cast<std::size_t>(wire::kKinds)),
      shared_bytes_(static_cast<std::size_t>(wire::kKinds)) {}

Transport::~Transport() {
    release_shared();
    std::lock_guard lock(hold_mu_);
    if (!holds_.empty()) {
        // A reader may still copy them: their blocks must not be punched out or handed out again.
        // NOLINTNEXTLINE(cppcoreguidelines-owning-memory): leaked on purpose
        std::ignore = new (std::nothrow) std::vector<Hold>(std::move(holds_));
    }
}

Result<void> Transport::share_node_memory(const std::vector<std::string>& nodes, bool enable) {
    const int n = size();
    const int me = rank();
    std::vector<int> local(static_cast<std::size_t>(n), -1);
    std::map<std::string, int> on_node;
    for (int r = 0; r < n; ++r) {
        local[static_cast<std::size_t>(r)] = on_node[nodes[static_cast<std::size_t>(r)]]++;
    }
    const auto at = [](auto& v, int r) -> auto& {
        return v[static_cast<std::size_t>(r)];
    };
    const std::string& node = at(nodes, me);
    const auto usable = [&](int r) { return at(local, r) < shm_detail::ArenaBlock::kMaxReaders; };
    shm_detail::ArenaAnnounce mine{};
    if (enable && on_node[node] > 1 && usable(me)) {
        auto arena = shm_detail::NodeArena::install();
        if (!arena) {
            fmt::print(stderr, "strata dsm: warning: rank {} shares no memory on node {}: {}\n", me, node,
                       arena.error().what());
        } else if ((*arena)->is_shared()) {
            arena_ = *arena;
            mine = arena_->announce();
        }
    }
    std::vector<shm_detail::ArenaAnnounce> all(static_cast<std::size_t>(n));
    if (int rc = MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, comm());
        rc != MPI_SUCCESS) {
        return make_error(Errc::io_error, "dsm::Node::join: MPI_Allgather of the node arenas: {}", mpi_error_text(rc));
    }
    std::vector<char> mapped(static_cast<std::size_t>(n), 0);
    peers_.resize(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r) {
        if (r == me || arena_ == nullptr || at(nodes, r) != node || at(all, r).pid == 0 || !usable(r)) {
            continue;
        }
        if (auto peer = shm_detail::PeerArena::open(at(all, r)); peer) {
            at(peers_, r) = std::make_shared<const shm_detail::PeerArena>(std::move(*peer));
            at(mapped, r) = 1;
        } else {
            fmt::print(stderr, "strata dsm: warning: rank {} takes rank {}'s data through MPI: {}\n", me, r,
                       peer.error().what());
        }
    }
    std::vector<char> matrix(static_cast<std::size_t>(n) * static_cast<std::size_t>(n));
    if (int rc = MPI_Allgather(mapped.data(), n, MPI_CHAR, matrix.data(), n, MPI_CHAR, comm()); rc != MPI_SUCCESS) {
        return make_error(Errc::io_error, "dsm::Node::join: MPI_Allgather of the mapped arenas: {}",
                          mpi_error_text(rc));
    }
    reader_index_.assign(static_cast<std::size_t>(n), -1);
    for (int t = 0; t < n; ++t) {
        if (arena_ != nullptr &&
            matrix[static_cast<std::size_t>(t) * static_cast<std::size_t>(n) + static_cast<std::size_t>(me)] != 0) {
            at(reader_index_, t) = at(local, t);
        }
    }
    my_index_ = at(local, me);
    return {};
}

bool Transport::doze(std::chrono::microseconds limit) {
    if (arena_ == nullptr || channel_->sends_in_flight() != 0 || channel_->arriving() != 0) {
        return false;
    }
    const std::uint32_t ticket = arena_->doze_ticket();
    // Checked after the ticket: a peer that posted before it saw no sleeper, and its message is here.
    arena_->doze(ticket, channel_->message_waiting() ? std::chrono::microseconds(0) : limit);
    return true;
}

void Transport::ring(int dest) const {
    if (dest >= 0 && static_cast<std::size_t>(dest) < peers_.size()) {
        if (const auto& peer = peers_[static_cast<std::size_t>(dest)]) {
            peer->ring();
            return;
        }
    }
    if (arena_ != nullptr) {
        arena_->wake();  // a send elsewhere may need this rank's progress to leave
    }
}

std::size_t Transport::release_shared() {
    if (hold_count_.load(std::memory_order_acquire) == 0) {
        return 0;
    }
    std::vector<std::shared_ptr<net::Bytes>> done;  // freed outside the lock
    std::size_t live = 0;
    std::lock_guard lock(hold_mu_);
    std::erase_if(holds_, [&](Hold& h) {
        if (h.block->holds[static_cast<std::size_t>(h.reader)].load(std::memory_order_acquire) == 0) {
            done.push_back(std::move(h.buffer));
            return true;
        }
        // A reader found dead keeps its holds: if it only stopped answering it may still read
        // (a buffer freed under it would be silent corruption); its buffers are the price.
        live += channel_->is_dead(h.dest) ? 0U : 1U;
        return false;
    });
    hold_count_.store(holds_.size(), std::memory_order_release);
    return live;
}

void Transport::flush(std::chrono::milliseconds limit) {
    const auto deadline = Clock::now() + limit;
    channel_->flush(limit);
    while (release_shared() != 0 && Clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
}

Result<void> Transport::post(int dest, const wire::Header& h, std::span<const std::byte> payload) {
    const std::int64_t at = log_ != nullptr ? log_->now() : 0;
    auto posted = channel_->post(dest, std::as_bytes(std::span(&h, 1)), payload);
    if (posted) {
        ring(dest);
        if (log_ != nullptr) {
            log_->record(true, dest, h, at);
        }
    }
    return posted;
}

Result<void> Transport::post_buffer(int dest, std::shared_ptr<net::Bytes> buffer) {
    wire::Header h;
    const bool has_header = buffer && buffer->size() >= sizeof h;
    if (has_header) {
        std::memcpy(&h, buffer->data(), sizeof h);
    }
    const std::int64_t at = log_ != nullptr ? log_->now() : 0;
    shm_detail::ArenaBlock* block = nullptr;
    if (has_header && arena_ != nullptr && reader_index_[static_cast<std::size_t>(dest)] >= 0) {
        block = arena_->block_of(buffer->data(), buffer->size());
    }
    auto posted = block != nullptr ? post_shared(dest, h, std::move(buffer), block)
                                   : channel_->post_buffer(dest, std::move(buffer));
    if (posted) {
        ring(dest);
    }
    if (posted && has_header && log_ != nullptr) {
        log_->record(true, dest, h, at);
    }
    return posted;
}

Result<void> Transport::post_shared(int dest, const wire::Header& h, std::shared_ptr<net::Bytes> buffer,
                                    shm_detail::ArenaBlock* block) {
    const int reader = reader_index_[static_cast<std::size_t>(dest)];
    const wire::SharedRef ref{.offset = arena_->offset_of(block), .length = buffer->size()};
    // Held before the reference leaves: the reader lowers the count once it copied the bytes.
    block->holds[static_cast<std::size_t>(reader)].fetch_add(1, std::memory_order_relaxed);
    {
        std::lock_guard lock(hold_mu_);
        holds_.push_back({.buffer = std::move(buffer), .block = block, .dest = dest, .reader = reader});
        hold_count_.store(holds_.size(), std::memory_order_release);
    }
    wire::Header small = h;
    small.flags |= wire::kShared;
    auto posted = channel_->post(dest, std::as_bytes(std::span(&small, 1)), std::as_bytes(std::span(&ref, 1)));
    if (posted) {
        shared_msgs_[h.kind].fetch_add(1, std::memory_order_relaxed);
        shared_bytes_[h.kind].fetch_add(ref.length, std::memory_order_relaxed);
    } else {
        block->holds[static_cast<std::size_t>(reader)].fetch_sub(1, std::memory_order_relaxed);
    }
    return posted;  // a failed post leaves its entry, count back down: release_shared() drops it
}

namespace {

/// A notify read in place holds the sender's buffer until the notification is dropped. In a
/// forked child the copy of this hold gives nothing back: the parent's is the one that counts.
struct ViewHold {
    std::shared_ptr<const shm_detail::PeerArena> arena;
    std::uint64_t offset = 0;
    int reader = -1;
    pid_t pid = ::getpid();
    ViewHold(std::shared_ptr<const shm_detail::PeerArena> a, std::uint64_t at, int r)
        : arena(std::move(a)), offset(at), reader(r) {}
    ViewHold(const ViewHold&) = delete;
    ViewHold& operator=(const ViewHold&) = delete;
    ~ViewHold() {
        if (::getpid() == pid) {
            arena->release(offset, reader);
        }
    }
};

}  // namespace

Result<void> Transport::take_shared(Incoming& in) {
    const auto source = static_cast<std::size_t>(in.source);
    const auto peer = in.source >= 0 && source < peers_.size() ? peers_[source] : nullptr;
    wire::SharedRef ref;
    if (peer == nullptr || in.payload().size() != sizeof ref) {
        return make_error(Errc::internal, "dsm: rank {} sent a {} by reference to its memory, which rank {} {}",
                          in.source, wire::kind_name(in.header.kind), rank(),
                          peer != nullptr ? "cannot read (bad size)" : "did not map");
    }
    std::memcpy(&ref, in.payload().data(), sizeof ref);
    auto bytes = peer->bytes(ref.offset, ref.length);
    if (!bytes || ref.length < sizeof(wire::Header)) {
        return make_error(Errc::internal, "dsm: rank {} sent a {} by a bad reference: {}", in.source,
                          wire::kind_name(in.header.kind),
                          bytes ? "shorter than a header" : std::string_view(bytes.error().what()));
    }
    wire::Header h;
    std::memcpy(&h, bytes->data(), sizeof h);
    if (h.kind != in.header.kind || h.chunk != in.header.chunk || h.version != in.header.version) {
        return make_error(Errc::internal, "dsm: rank {} sent a {} whose reference holds a {} of another chunk",
                          in.source, wire::kind_name(in.header.kind), wire::kind_name(h.kind));
    }
    in.header = h;
    if (h.kind == static_cast<std::uint8_t>(proto::Msg::notify)) {
        // Only a Notification takes a notify's bytes, and it keeps them read-only: no copy.
        in.view_keep = std::make_shared<const ViewHold>(peer, ref.offset, my_index_);
        in.view = *bytes;
        return {};
    }
    auto copy = channel_->buffer(ref.length);
    std::memcpy(copy->data(), bytes->data(), ref.length);
    peer->release(ref.offset, my_index_);
    in.buffer = std::move(copy);
    return {};
}

Result<bool> Transport::poll(Incoming& in) {
    release_shared();
    net::Received got;
    auto polled = channel_->poll(got);
    if (!polled || !*polled) {
        return polled;
    }
    if (got.buffer->size() < sizeof(wire::Header)) {
        return make_error(Errc::internal, "dsm: a message of {} bytes from rank {} is shorter than a header",
                          got.buffer->size(), got.source);
    }
    in.source = got.source;
    std::memcpy(&in.header, got.buffer->data(), sizeof(wire::Header));
    in.buffer = std::move(got.buffer);
    in.view = {};
    in.view_keep.reset();
    if ((in.header.flags & wire::kShared) != 0) {
        if (auto taken = take_shared(in); !taken) {
            return std::unexpected(taken.error());
        }
    }
    if (log_ != nullptr) {
        log_->record(false, in.source, in.header);
    }
    return true;
}

Traffic Transport::traffic() const {
    const auto sent = channel_->sent();
    const auto received = channel_->received();
    Traffic t;
    for (int k = 0; k < wire::kKinds; ++k) {
        const auto i = static_cast<std::size_t>(k);
        t.kinds.emplace_back(wire::kind_name(k));
        t.sent.push_back({sent[i].messages, sent[i].bytes});
        t.received.push_back({received[i].messages, received[i].bytes});
        t.shared.push_back(
            {shared_msgs_[i].load(std::memory_order_relaxed), shared_bytes_[i].load(std::memory_order_relaxed)});
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
