// SPDX-License-Identifier: MIT
// Software distributed shared memory over MPI: libstrata-dsm (docs/dsm.md).
//
// The ranks of an MPI communicator join one DSM. The first `servers` ranks are
// servers: each is the home of some chunks, keeps their directory entry and
// their home copy, and serializes every request for them. The other ranks are
// clients and run the user's code; a client talks only to the home of a chunk
// (the paper's super-peer arrangement). Chunk data is cached on each client
// in a strata Region (memory tier), one per chunk it holds.
//
// Consistency: release consistency per chunk through acquire/release. Between
// acquire_read(c) and release(c) the bytes of c are those of the last release
// of a write of c anywhere (and no write can be released meanwhile); between
// acquire_write(c) and release(c) this client is the only one with c. A
// chunk stays cached after release (MESI: a later acquire is local while no
// one else asked for it).
//
// Publish-subscribe: subscribe(c) makes every later release of a write of c
// anywhere produce a notification here (wait_notification()), in release
// order; with update_on_write the released bytes come with it (a snapshot of
// that version: reading them needs no acquire).
//
// Example (rank 0 serves, every other rank is a client):
//
//   MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
//   auto node = strata::dsm::Node::join(MPI_COMM_WORLD, {.servers = 1});
//   if (!node) { fmt::print(stderr, "{}\n", node.error().what()); return 1; }
//   if (node->is_server()) { return node->serve() ? 0 : 1; }
//   strata::dsm::ChunkId id = 0;
//   if (node->client_index() == 0) id = *node->allocate(4096);
//   MPI_Bcast(&id, 1, MPI_UINT64_T, 0, node->clients_comm());
//   auto bytes = node->acquire_write(id);  ... node->release(id);
//   node->leave();
//
// Errors: every call returns a Result; a bad argument is invalid_argument
// naming it (size=0, chunk=<id>, servers=<n>); a chunk its home does not know
// is not_found; a peer that stops answering for Options::timeout is peer_dead
// naming its rank (never a hang; see docs/dsm.md for what is lost).
//
// Thread safety: a client Node may be used from several threads at once; a
// thread blocks in acquire while another thread of the same node holds the
// chunk incompatibly. serve() and leave() are called once, from one thread.
// MPI must be initialized with MPI_THREAD_MULTIPLE (a progress thread receives
// messages while user threads send).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <mpi.h>

#include "strata/error.hpp"

namespace strata::dsm {

/// A chunk's global name. It encodes its home (or, for first_touch, the
/// server that locates it), so any client can route a request without lookup.
using ChunkId = std::uint64_t;

/// Where a chunk's home is.
struct HomePolicy {
    enum class Kind : std::uint8_t {
        by_id,        ///< a server chosen by a hash of the id (spreads chunks)
        first_touch,  ///< the server nearest the first client that requests the chunk
        node,         ///< the server with index `server` (0 .. servers-1)
    };
    Kind kind = Kind::by_id;
    int server = -1;

    static HomePolicy by_id() { return {}; }
    static HomePolicy first_touch() { return {Kind::first_touch, -1}; }
    static HomePolicy node(int server_index) { return {Kind::node, server_index}; }
};

/// How clients reach the homes (docs/dsm.md, "Topology").
enum class Topology : std::uint8_t {
    /// A client sends each request to the chunk's home (or locator) itself.
    direct,
    /// The paper's super-peer network: a client sends every request to one server, its super-peer
    /// (a server on its own node where there is one), which serves it when it is the chunk's home
    /// and otherwise passes it on to the server the chunk id names, once, without a copy. Homes
    /// answer the client directly, so data travels home -> client in one message.
    super_peer,
};

struct Options {
    /// Ranks 0 .. servers-1 of the communicator serve; at least one rank must be left as a client.
    int servers = 1;
    /// Unset: $STRATA_DSM_TOPOLOGY (`direct` or `super-peer`), else direct. Every rank must use
    /// the same topology.
    std::optional<Topology> topology{};
    /// Home replication (docs/dsm.md, "Replication"): each server copies every chunk it is home
    /// of (its creation, each new version, its loss or free) and what it locates to its backup,
    /// the next server (index + 1 mod servers). When a server dies its backup takes its chunks
    /// and locks over: it asks every client for its copies and the locks it holds, rebuilds the
    /// directory from their answers and its copies, and the clients send their waiting requests
    /// again; no chunk is lost to one server's death. Off: a dead server's chunks are lost.
    /// Needs 2 servers at least and the direct topology; every rank must use the same value.
    bool replication = false;
    /// Direct data path (docs/dsm.md): a release of a chunk with update-on-write subscribers
    /// sends its bytes from the writer straight to them; the home gets the new version only and
    /// keeps the directory. The price: until the home recalls it, the writer's copy is the only
    /// current one, so the writer's death loses its last release (the chunk is broken), as for
    /// any chunk without subscribers. Off, with replication, or under the super-peer topology,
    /// every release passes through the home. Every rank must use the same value.
    bool direct_data = true;
    /// Same-node data (docs/dsm.md): a message of 1 MiB or more to a rank of the same node
    /// ($STRATA_NODE, else the host name) is handed over by reference into this rank's memory,
    /// and the receiver copies it out, instead of MPI pipelining it through its shared cells.
    /// Unset: $STRATA_DSM_NODE_SHARING (0 or 1), else on. Ranks may differ: two ranks share
    /// only when both have it on.
    std::optional<bool> node_sharing{};
    /// A peer that answers no message and no ping for this long is dead.
    std::chrono::milliseconds timeout{5000};
    /// How often a waiting node pings the peers it waits for.
    std::chrono::milliseconds heartbeat{250};
    /// The protocol's event log (paper 003 measured one): every message this rank sends or
    /// receives — time, direction, kind, peer, client, chunk, version, size — is kept in memory
    /// and written as text when the node ends (write_event_log() or the destructor) to this
    /// path, every "%r" replaced by the rank; the file must not exist (O_EXCL). Empty: off,
    /// unless $STRATA_DSM_EVENT_LOG gives the path.
    std::string event_log{};
    /// Events kept per rank (allocated at join: 56 bytes each); later ones are counted as
    /// dropped, and the file's first line says how many.
    std::size_t event_log_capacity = std::size_t{1} << 20;
};

struct SubscribeOptions {
    /// Push the released bytes with each notification.
    bool update_on_write = false;
};

/// One release of a write of a subscribed chunk.
struct Notification {
    ChunkId chunk = 0;
    std::uint64_t version = 0;  ///< the chunk's version after that release (1, 2, ...)
    bool has_data = false;
    /// With update_on_write: the bytes of that version (the received buffer itself, no copy; from a
    /// writer of the same node, the writer's buffer, kept unchanged while this is alive).
    [[nodiscard]] std::span<const std::byte> data() const { return bytes_; }

    std::shared_ptr<const void> storage_{};  ///< internal: keeps the received message alive
    std::span<const std::byte> bytes_{};     ///< internal: the bytes in it
};

/// Messages and bytes (payload and header) per message kind.
struct TrafficCount {
    std::uint64_t messages = 0;
    std::uint64_t bytes = 0;
};
struct Traffic {
    std::vector<std::string> kinds;  ///< kind names, same order as sent/received
    std::vector<TrafficCount> sent;
    std::vector<TrafficCount> received;
    /// Of `sent`: the messages a rank of the same node copied out of this rank's memory
    /// (Options::node_sharing); their bytes here, the reference MPI carried in `sent`.
    std::vector<TrafficCount> shared;
    [[nodiscard]] TrafficCount total_sent() const;
};

/// One rank's membership in a DSM.
class Node {
public:
    /// Collective over `comm`: every rank calls it with the same options. It
    /// duplicates `comm` (errors return, never abort) and starts the progress thread on clients.
    static Result<Node> join(MPI_Comm comm, const Options& options);

    Node(Node&&) noexcept;
    Node& operator=(Node&&) noexcept;
    Node(const Node&) = delete;
    Node& operator=(const Node&) = delete;
    /// A client that did not leave() leaves without the barrier; a server stops serving.
    ~Node();

    [[nodiscard]] bool is_server() const noexcept;
    [[nodiscard]] int rank() const noexcept;
    [[nodiscard]] int servers() const noexcept;
    [[nodiscard]] int clients() const noexcept;
    /// 0 .. clients()-1 on clients, -1 on servers.
    [[nodiscard]] int client_index() const noexcept;
    /// The topology in force (Options::topology or the environment's).
    [[nodiscard]] Topology topology() const noexcept;
    /// A client's super-peer: the rank of the server it sends every request to; -1 on a server
    /// and in the direct topology.
    [[nodiscard]] int super_peer() const noexcept;
    /// The clients' communicator (for the user's own collectives); MPI_COMM_NULL on servers.
    [[nodiscard]] MPI_Comm clients_comm() const noexcept;

    /// Servers: answers requests until every client left or died. An error
    /// names a protocol violation or an MPI failure; dead clients are not errors.
    Result<void> serve();

    /// Clients: a new zero-filled chunk of `size` bytes (>0), homed by `home`.
    Result<ChunkId> allocate(std::size_t size, HomePolicy home = HomePolicy::by_id());
    /// Frees the chunk everywhere; copies cached by others are dropped.
    Result<void> free(ChunkId chunk);
    /// Waits for read access; the span stays valid until release(chunk).
    Result<std::span<const std::byte>> acquire_read(ChunkId chunk);
    /// Waits for exclusive access with the current bytes; valid until release(chunk).
    Result<std::span<std::byte>> acquire_write(ChunkId chunk);
    /// acquire_write for a writer that overwrites every byte: the span's contents are
    /// unspecified (the last release's, or an older one's). The difference is a copy: while a
    /// send of the last release still reads its bytes (the direct data path sends from the
    /// chunk's own buffer), acquire_write copies them into a second buffer, this does not.
    Result<std::span<std::byte>> acquire_overwrite(ChunkId chunk);
    /// Ends this thread's acquisition (read or write) of the chunk.
    Result<void> release(ChunkId chunk);
    /// Drops the cached copy (written back to the home if modified).
    Result<void> evict(ChunkId chunk);
    /// The size of a chunk this client holds or held.
    Result<std::size_t> size_of(ChunkId chunk) const;

    /// Every later release of a write of `chunk` by another client is notified here.
    Result<void> subscribe(ChunkId chunk, SubscribeOptions options = {});
    Result<void> unsubscribe(ChunkId chunk);
    /// The next notification, waiting up to `timeout` (timeout error past it).
    Result<Notification> wait_notification(std::chrono::milliseconds timeout);

    /// Barrier of all clients (a release and acquire point of every chunk needs no more: acquires are eager).
    Result<void> barrier();
    /// Waits for the global mutex `id` (served by server id % servers, FIFO).
    /// Held by this client, not a thread; not recursive: invalid_argument
    /// naming lock=<id> if this client holds or asks for it already. broken
    /// naming the lock and the dead holder once a holder died holding it.
    Result<void> lock(std::uint32_t id);
    /// Hands the lock to the next waiter. invalid_argument naming lock=<id>,
    /// nothing sent, if this client does not hold it.
    Result<void> unlock(std::uint32_t id);

    /// Clients: a barrier of all clients, then tells the servers this client is done.
    Result<void> leave();

    /// Messages and bytes this rank sent and received, per kind.
    [[nodiscard]] Traffic traffic() const;
    /// Writes the event log now (Options::event_log), once; on a client, after leave() (the
    /// progress thread records until then). Returns how many events were written; 0 when the
    /// log is off or was written already. Not called: the destructor writes it.
    Result<std::uint64_t> write_event_log();

    struct Impl;

private:
    explicit Node(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace strata::dsm
