// SPDX-License-Identifier: MIT
// dsm::Node: joining, the public operations, leaving.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string_view>

#include <fmt/format.h>

#include "core/env_switch.hpp"
#include "dsm/node_impl.hpp"

namespace strata::dsm {
namespace {

constexpr std::uint64_t kGolden = 0x9E3779B97F4A7C15U;  // spreads consecutive counters over servers

Result<void> validate(MPI_Comm comm, const Options& o, int size) {
    (void)comm;
    if (o.servers < 1 || o.servers >= size) {
        return make_error(Errc::invalid_argument,
                          "dsm::Node::join: servers={}: the job has {} ranks; between 1 and {} may serve, at least one "
                          "must be a client",
                          o.servers, size, size - 1);
    }
    if (o.servers > 255) {
        return make_error(Errc::invalid_argument, "dsm::Node::join: servers={}: at most 255 servers", o.servers);
    }
    if (size - o.servers > proto::kMaxClients) {
        return make_error(Errc::invalid_argument,
                          "dsm::Node::join: clients={}: at most {} clients (ranks minus servers)", size - o.servers,
                          proto::kMaxClients);
    }
    if (!o.event_log.empty() && o.event_log_capacity == 0) {
        return make_error(Errc::invalid_argument,
                          "dsm::Node::join: event_log_capacity=0: an event log needs room for one event at least");
    }
    if (o.replication && o.servers < 2) {
        return make_error(Errc::invalid_argument,
                          "dsm::Node::join: replication=on with servers={}: a home's copies go to another server, so "
                          "replication needs 2 servers at least",
                          o.servers);
    }
    if (o.timeout.count() <= 0 || o.heartbeat.count() <= 0 || o.heartbeat >= o.timeout) {
        return make_error(
            Errc::invalid_argument,
            "dsm::Node::join: timeout={}ms heartbeat={}ms: both must be positive, heartbeat below timeout",
            o.timeout.count(), o.heartbeat.count());
    }
    return {};
}

// Options::topology, else $STRATA_DSM_TOPOLOGY, else direct.
Result<Topology> resolve_topology(const Options& o) {
    if (o.topology) {
        return *o.topology;
    }
    const char* env = std::getenv("STRATA_DSM_TOPOLOGY");
    if (env == nullptr || *env == '\0') {
        return Topology::direct;
    }
    const std::string_view value(env);
    if (value == "direct") {
        return Topology::direct;
    }
    if (value == "super-peer" || value == "super_peer") {
        return Topology::super_peer;
    }
    return make_error(Errc::invalid_argument,
                      "dsm::Node::join: STRATA_DSM_TOPOLOGY={}: not a topology (direct or super-peer)", value);
}

// The switches a rank reads from its environment at join, each refused by name when not 0 or 1.
struct Switches {
    bool node_sharing = true;   // Options::node_sharing, else $STRATA_DSM_NODE_SHARING
    bool doze = true;           // $STRATA_DSM_DOZE (Backoff)
    bool batch_pollers = true;  // $STRATA_DSM_BATCH_POLLERS (Backoff)
};

Result<Switches> resolve_switches(const Options& o) {
    Switches s;
    for (auto [name, into] :
         {std::pair{"STRATA_DSM_NODE_SHARING", &s.node_sharing}, std::pair{"STRATA_DSM_DOZE", &s.doze},
          std::pair{"STRATA_DSM_BATCH_POLLERS", &s.batch_pollers}}) {
        auto value = core::env_switch(name, *into);
        if (!value) {
            return make_error(Errc::invalid_argument, "dsm::Node::join: {}", value.error().message);
        }
        *into = *value;
    }
    s.node_sharing = o.node_sharing.value_or(s.node_sharing);
    return s;
}

// Each client's super-peer: one of the servers of its own node, the node's
// clients dealt over them in turn; a client on a node without a server is
// dealt over all servers by its index. Every rank computes the same table.
std::vector<int> assign_super_peers(const std::vector<std::string>& nodes, int servers) {
    std::vector<int> peers;
    std::map<std::string, int> dealt;  // clients of each node so far
    for (std::size_t r = static_cast<std::size_t>(servers); r < nodes.size(); ++r) {
        std::vector<int> local;
        for (int s = 0; s < servers; ++s) {
            if (nodes[static_cast<std::size_t>(s)] == nodes[r]) {
                local.push_back(s);
            }
        }
        const int turn = dealt[nodes[r]]++;
        const int client = static_cast<int>(r) - servers;
        peers.push_back(local.empty() ? client % servers : local[static_cast<std::size_t>(turn) % local.size()]);
    }
    return peers;
}

// Every rank's node name: $STRATA_NODE (emulated nodes share a host name),
// else the host name; at most 63 bytes each.
Result<std::vector<std::string>> gather_nodes(MPI_Comm comm, int size) {
    constexpr std::size_t kName = 64;
    std::array<char, kName> mine{};
    if (const char* env = std::getenv("STRATA_NODE"); env != nullptr && *env != '\0') {
        std::strncpy(mine.data(), env, kName - 1);
    } else if (::gethostname(mine.data(), kName - 1) != 0) {
        std::strncpy(mine.data(), "unknown host", kName - 1);
    }
    std::vector<char> all(kName * static_cast<std::size_t>(size));
    if (int rc = MPI_Allgather(mine.data(), kName, MPI_CHAR, all.data(), kName, MPI_CHAR, comm); rc != MPI_SUCCESS) {
        return make_error(Errc::io_error, "dsm::Node::join: MPI_Allgather of the node names: {}", mpi_error_text(rc));
    }
    std::vector<std::string> nodes;
    for (int r = 0; r < size; ++r) {
        const char* name = all.data() + kName * static_cast<std::size_t>(r);
        nodes.emplace_back(name, ::strnlen(name, kName - 1));
    }
    return nodes;
}

// Options::event_log, else $STRATA_DSM_EVENT_LOG: the log starts recording before any message.
// A path that exists is refused now rather than at the end, when the run's events would be lost.
Result<void> start_event_log(Node::Impl& impl, const Options& options) {
    std::string pattern = options.event_log;
    const char* env = std::getenv("STRATA_DSM_EVENT_LOG");
    if (pattern.empty() && env != nullptr) {
        pattern = env;
    }
    if (pattern.empty()) {
        return {};
    }
    const std::string path = event_log_path(pattern, impl.net->rank());
    std::error_code ec;
    // Every rank learns whether one refused, so that none goes on into join's collectives alone.
    int exists = std::filesystem::exists(std::filesystem::symlink_status(path, ec)) ? 1 : 0;
    int any = exists;
    MPI_Allreduce(&exists, &any, 1, MPI_INT, MPI_MAX, impl.net->comm());
    if (exists != 0) {
        return make_error(Errc::already_exists,
                          "dsm::Node::join: event_log={}: {} exists (the log never replaces a file)", pattern, path);
    }
    if (any != 0) {
        return make_error(Errc::already_exists,
                          "dsm::Node::join: event_log={}: another rank's log file exists (the log never replaces a "
                          "file)",
                          pattern);
    }
    impl.event_log = std::make_unique<EventLog>(std::max<std::size_t>(options.event_log_capacity, 1));
    impl.event_log_path = path;
    impl.net->set_event_log(impl.event_log.get());
    return {};
}

}  // namespace

Node::Node(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Node::Node(Node&&) noexcept = default;
Node& Node::operator=(Node&&) noexcept = default;

Node::~Node() {
    if (!impl_) {
        return;
    }
    if (!impl_->is_server()) {
        impl_->stop_progress();
    }
    if (auto written = impl_->write_event_log(); !written) {
        std::fprintf(stderr, "%s\n", written.error().what().c_str());
    }
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (impl_->clients_comm != MPI_COMM_NULL && finalized == 0) {
        MPI_Comm_free(&impl_->clients_comm);
    }
}

Result<Node> Node::join(MPI_Comm comm, const Options& options) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized == 0) {
        return make_error(Errc::invalid_argument,
                          "dsm::Node::join: MPI is not initialized (call MPI_Init_thread first)");
    }
    int level = 0;
    MPI_Query_thread(&level);
    if (level != MPI_THREAD_MULTIPLE) {
        return make_error(Errc::unsupported,
                          "dsm::Node::join: MPI thread level {} provided; the DSM needs MPI_THREAD_MULTIPLE ({})",
                          level, static_cast<int>(MPI_THREAD_MULTIPLE));
    }
    int size = 0;
    MPI_Comm_size(comm, &size);
    if (auto v = validate(comm, options, size); !v) {
        return std::unexpected(v.error());
    }
    // A dead peer must not kill the survivors: MPICH's hydra, run with
    // -disable-auto-cleanup, tells them of a failed rank by SIGUSR1, and a
    // write to a dead peer's socket raises SIGPIPE; both kill by default. The
    // DSM reports dead peers itself, so a default action becomes ignore (a
    // handler the program installed is left alone).
    for (int sig : {SIGUSR1, SIGPIPE}) {
        struct sigaction old {};
        if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) {
            ::signal(sig, SIG_IGN);
        }
    }
    auto topology = resolve_topology(options);
    if (!topology) {
        return std::unexpected(topology.error());
    }
    auto switches = resolve_switches(options);
    if (!switches) {
        return std::unexpected(switches.error());
    }
    if (options.replication && *topology == Topology::super_peer) {
        return make_error(Errc::invalid_argument,
                          "dsm::Node::join: replication=on with topology=super-peer: what a dead super-peer was "
                          "passing on cannot be recovered; replication needs the direct topology");
    }
    auto impl = std::make_unique<Impl>();
    impl->options = options;
    impl->topology = *topology;
    impl->doze = switches->doze;
    impl->batch_pollers = switches->batch_pollers;
    impl->servers = options.servers;
    impl->clients = size - options.servers;
    impl->route_to = std::make_unique<std::atomic<int>[]>(static_cast<std::size_t>(options.servers));
    for (int s = 0; s < options.servers; ++s) {
        impl->route_to[static_cast<std::size_t>(s)].store(s);
    }
    auto net = Transport::create(comm);
    if (!net) {
        return std::unexpected(net.error());
    }
    impl->net = std::move(*net);
    impl->net->set_receive_timeout(options.timeout);
    if (auto logged = start_event_log(*impl, options); !logged) {
        return std::unexpected(logged.error());
    }
    auto nodes = gather_nodes(impl->net->comm(), size);
    if (!nodes) {
        return std::unexpected(nodes.error());
    }
    impl->nodes = std::move(*nodes);
    if (auto shared = impl->net->share_node_memory(impl->nodes, switches->node_sharing); !shared) {
        return std::unexpected(shared.error());
    }
    if (impl->topology == Topology::super_peer) {
        impl->super_peers = assign_super_peers(impl->nodes, impl->servers);
    }
    const int color = impl->is_server() ? MPI_UNDEFINED : 0;
    if (int rc = MPI_Comm_split(impl->net->comm(), color, impl->net->rank(), &impl->clients_comm); rc != MPI_SUCCESS) {
        return make_error(Errc::io_error, "dsm::Node::join: MPI_Comm_split: {}", mpi_error_text(rc));
    }
    if (impl->clients_comm != MPI_COMM_NULL) {
        MPI_Comm_set_errhandler(impl->clients_comm, MPI_ERRORS_RETURN);
    }
    if (!impl->is_server()) {
        impl->start_progress();
    }
    return Node(std::move(impl));
}

bool Node::is_server() const noexcept {
    return impl_->is_server();
}
int Node::rank() const noexcept {
    return impl_->net->rank();
}
int Node::servers() const noexcept {
    return impl_->servers;
}
int Node::clients() const noexcept {
    return impl_->clients;
}
int Node::client_index() const noexcept {
    return impl_->client_index();
}
Topology Node::topology() const noexcept {
    return impl_->topology;
}
int Node::super_peer() const noexcept {
    return impl_->super_peer();
}
MPI_Comm Node::clients_comm() const noexcept {
    return impl_->clients_comm;
}
Traffic Node::traffic() const {
    return impl_->net->traffic();
}

Result<std::uint64_t> Node::write_event_log() {
    if (!impl_->is_server() && impl_->progress.joinable()) {
        return make_error(Errc::invalid_argument,
                          "dsm::Node::write_event_log: rank {}: call it after leave() (the progress thread still "
                          "records)",
                          rank());
    }
    return impl_->write_event_log();
}

Result<std::uint64_t> Node::Impl::write_event_log() {
    if (!event_log || event_log_written) {
        return std::uint64_t{0};
    }
    event_log_written = true;
    const int rank = net->rank();
    const std::string who =
        fmt::format("rank {} of {} ({}), node {}", rank, net->size(), is_server() ? "server" : "client", node_of(rank));
    if (auto written = event_log->write(event_log_path, who); !written) {
        return std::unexpected(written.error());
    }
    return event_log->recorded();
}

Result<void> Node::serve() {
    if (!impl_->is_server()) {
        return make_error(Errc::invalid_argument, "dsm::Node::serve: rank {} is a client", rank());
    }
    return impl_->serve();
}

Result<ChunkId> Node::allocate(std::size_t size, HomePolicy home) {
    Impl& d = *impl_;
    if (d.is_server()) {
        return make_error(Errc::invalid_argument, "dsm::Node::allocate: rank {} is a server; clients allocate", rank());
    }
    if (size == 0) {
        return make_error(Errc::invalid_argument, "dsm::Node::allocate: size=0: a chunk holds at least one byte");
    }
    if (home.kind == HomePolicy::Kind::node && (home.server < 0 || home.server >= d.servers)) {
        return make_error(Errc::invalid_argument, "dsm::Node::allocate: home=node({}): the job has {} servers (0..{})",
                          home.server, d.servers, d.servers - 1);
    }
    const std::uint64_t counter = d.next_counter.fetch_add(1);
    int server = 0;
    int policy = wire::kPolicyById;
    switch (home.kind) {
        case HomePolicy::Kind::by_id:
            server = static_cast<int>(
                (((counter + (static_cast<std::uint64_t>(d.client_index()) << 24U)) * kGolden) >> 32U) %
                static_cast<std::uint64_t>(d.servers));
            break;
        case HomePolicy::Kind::first_touch:
            policy = wire::kPolicyFirstTouch;
            server = static_cast<int>((counter + static_cast<std::uint64_t>(d.client_index())) %
                                      static_cast<std::uint64_t>(d.servers));
            break;
        case HomePolicy::Kind::node:
            policy = wire::kPolicyNode;
            server = home.server;
            break;
    }
    const ChunkId id = wire::make_id(server, policy, d.client_index(), counter);
    wire::Header h;
    h.kind = static_cast<std::uint8_t>(wire::Kind::alloc_req);
    h.chunk = id;
    h.size = size;
    h.client = d.client_index();
    {
        std::lock_guard lock(d.mu);
        const int to = d.route(server);
        d.waits[{static_cast<int>(wire::Kind::alloc_req), id}] = Pending::asked(h, to);
        if (auto r = d.net->post(d.via(to), h); !r) {
            d.waits.erase({static_cast<int>(wire::Kind::alloc_req), id});
            return std::unexpected(r.error());
        }
    }
    if (auto r = d.wait_reply(fmt::format("dsm::Node::allocate: size={}", size),
                              static_cast<int>(wire::Kind::alloc_req), id, server);
        !r) {
        return std::unexpected(r.error());
    }
    return id;
}

Result<std::span<const std::byte>> Node::acquire_read(ChunkId chunk) {
    return impl_->acquire_bytes("dsm::Node::acquire_read", chunk, Impl::Access::read);
}

Result<std::span<std::byte>> Node::Impl::acquire_bytes(std::string_view op, ChunkId chunk, Access access) {
    auto c = acquire(op, chunk, access);
    if (!c) {
        return std::unexpected(c.error());
    }
    return std::span<std::byte>((*c)->bytes(), (*c)->size);
}

Result<std::span<std::byte>> Node::acquire_write(ChunkId chunk) {
    return impl_->acquire_bytes("dsm::Node::acquire_write", chunk, Impl::Access::write);
}

Result<std::span<std::byte>> Node::acquire_overwrite(ChunkId chunk) {
    return impl_->acquire_bytes("dsm::Node::acquire_overwrite", chunk, Impl::Access::overwrite);
}

Result<void> Node::release(ChunkId chunk) {
    Impl& d = *impl_;
    if (auto r = d.check_chunk_id("dsm::Node::release", chunk); !r) {
        return r;
    }
    std::lock_guard lock(d.mu);
    auto it = d.cache.find(chunk);
    if (it == d.cache.end() || !it->second.entry.held()) {
        return make_error(Errc::invalid_argument,
                          "dsm::Node::release: chunk={:#x}: not acquired on this node (release without acquire)",
                          chunk);
    }
    CacheChunk& c = it->second;
    const bool write = c.entry.writer;
    const proto::Step st = proto::client_receive(
        c.entry,
        {.kind = write ? proto::Msg::op_release_write : proto::Msg::op_release_read, .client = d.client_index()});
    if (!st.ok) {
        return make_error(Errc::internal, "dsm::Node::release: chunk={:#x}: {}", chunk, st.error);
    }
    auto sent = d.client_send(chunk, c, st);
    if (write) {
        d.took_own_release(chunk, c.entry.version);
    }
    if (c.entry.freed && !c.entry.held()) {
        d.cache.erase(it);
        d.cv.notify_all();
        return make_error(Errc::not_found,
                          "dsm::Node::release: chunk={:#x}: freed by another client while acquired here", chunk);
    }
    d.cv.notify_all();
    return sent;
}

Result<void> Node::evict(ChunkId chunk) {
    Impl& d = *impl_;
    if (auto r = d.check_chunk_id("dsm::Node::evict", chunk); !r) {
        return r;
    }
    std::lock_guard lock(d.mu);
    auto it = d.cache.find(chunk);
    if (it == d.cache.end()) {
        return {};
    }
    CacheChunk& c = it->second;
    if (c.entry.held() || c.entry.waiting()) {
        return make_error(Errc::busy, "dsm::Node::evict: chunk={:#x}: acquired or being acquired on this node", chunk);
    }
    const proto::Step st = proto::client_receive(c.entry, {.kind = proto::Msg::op_evict, .client = d.client_index()});
    if (!st.ok) {
        return make_error(Errc::internal, "dsm::Node::evict: chunk={:#x}: {}", chunk, st.error);
    }
    auto sent = d.client_send(chunk, c, st);
    if (!c.entry.has_deferred) {
        d.cache.erase(it);  // the region goes with it
    }
    return sent;
}

Result<std::size_t> Node::size_of(ChunkId chunk) const {
    std::lock_guard lock(impl_->mu);
    auto it = impl_->cache.find(chunk);
    if (it == impl_->cache.end() || it->second.size == 0) {
        return make_error(Errc::not_found, "dsm::Node::size_of: chunk={:#x}: not cached on this node", chunk);
    }
    return it->second.size;
}

}  // namespace strata::dsm
