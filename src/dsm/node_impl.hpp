// SPDX-License-Identifier: MIT
// The state of one DSM rank: the transport, and either the server's homes
// (server.cpp) or the client's cache and waiters (client.cpp).
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "core/batch_policy.hpp"
#include "dsm/notify_order.hpp"
#include "dsm/protocol_table.hpp"
#include "dsm/transport.hpp"
#include "strata/dsm.hpp"
#include "strata/region.hpp"

namespace strata::dsm {

/// A chunk this server is home of.
struct HomeChunk {
    proto::HomeEntry entry{};
    std::optional<Region> data{};
    std::size_t size = 0;
    std::string lost{};  ///< non-empty: why the chunk's data is gone (requests fail with peer_dead)
};

/// A chunk this client caches or waits for.
struct CacheChunk {
    proto::ClientEntry entry{};
    /// A wire header's room, then the chunk's bytes: a message carrying them is this buffer with
    /// its header written in front, sent without a copy (and a received grant's buffer becomes
    /// it). Sends in flight share it: it is written only while this entry is its sole owner
    /// (Impl::own_bytes copies it first otherwise). Null until bytes came.
    std::shared_ptr<net::Bytes> wire{};
    /// The buffer a send in flight took over: `wire` again once that send is done (two
    /// buffers take turns when releases follow each other faster than their sends).
    std::shared_ptr<net::Bytes> spare{};
    std::size_t size = 0;
    [[nodiscard]] std::byte* bytes() const { return wire->data() + sizeof(wire::Header); }
    int home = -1;                  ///< rank of the home (the locator until it answers, for first touch)
    std::optional<Error> failed{};  ///< the waiting acquisition failed with this
};

/// A reply some API call waits for (allocation, subscription, free, lock).
struct Pending {
    bool done = false;
    std::optional<Error> error;
    /// The request and the server rank it went to: sent again to that server's backup if it
    /// dies first (Options::replication).
    wire::Header sent{};
    int server = -1;

    /// A request `sent` to `server`, its answer not in yet.
    static Pending asked(const wire::Header& sent, int server) {
        return {.done = false, .error = std::nullopt, .sent = sent, .server = server};
    }
};

struct Node::Impl {
    Options options;
    std::unique_ptr<Transport> net;
    int servers = 1;
    int clients = 0;
    MPI_Comm clients_comm = MPI_COMM_NULL;
    /// Each rank's node ($STRATA_NODE, else the host name), so that an error
    /// about a lost peer says which node to look at.
    std::vector<std::string> nodes;

    [[nodiscard]] const std::string& node_of(int rank) const { return nodes[static_cast<std::size_t>(rank)]; }

    // ---- the event log (event_log.hpp): null when off ----
    std::unique_ptr<EventLog> event_log;
    std::string event_log_path;
    bool event_log_written = false;
    Result<std::uint64_t> write_event_log();

    [[nodiscard]] bool is_server() const { return net->rank() < servers; }
    [[nodiscard]] int client_index() const { return is_server() ? -1 : net->rank() - servers; }
    [[nodiscard]] int rank_of_client(int client) const { return client + servers; }

    // ---- how pollers wait (Backoff; $STRATA_DSM_DOZE, $STRATA_DSM_BATCH_POLLERS) ----
    bool doze = true;
    bool batch_pollers = true;

    // ---- topology (Options::topology) ----
    Topology topology = Topology::direct;
    /// super_peer: each client's super-peer (a server rank), by client index; empty: direct.
    std::vector<int> super_peers;
    /// This client's super-peer, -1 on servers and in the direct topology.
    [[nodiscard]] int super_peer() const {
        return super_peers.empty() || is_server() ? -1 : super_peers[static_cast<std::size_t>(client_index())];
    }
    /// Where a client sends a message meant for server rank `server`.
    [[nodiscard]] int via(int server) const {
        const int sp = super_peer();
        return sp >= 0 ? sp : server;
    }
    /// The rank a request came from: its client when a super-peer (or a
    /// first-touch locator) passed it on, else the sender.
    [[nodiscard]] int requester(const Incoming& in) const {
        return in.source < servers ? rank_of_client(in.header.client) : in.source;
    }

    // ---- home replication (Options::replication; replication.cpp) ----
    /// Per server rank: itself while it serves; once it died, the next server, whose own route
    /// then leads to the server that took its chunks over. Atomic: a client's threads read it.
    std::unique_ptr<std::atomic<int>[]> route_to;
    /// The server now serving what server `server` served (itself while it lives).
    [[nodiscard]] int route(int server) const;
    [[nodiscard]] bool failed(int server) const {
        return route_to[static_cast<std::size_t>(server)].load(std::memory_order_acquire) != server;
    }
    /// The live server that takes server `server`'s chunks over when it dies (route of the next
    /// server); -1 when replication is off or there is none left.
    [[nodiscard]] int keeper(int server) const;

    // server side: copies kept for the servers this one is keeper of, and their recoveries
    struct Replica {
        std::size_t size = 0;
        std::uint64_t version = 0;
        std::optional<Region> data{};
        std::string lost{};
    };
    struct ReplicaSet {  ///< what one server copied here
        std::unordered_map<ChunkId, Replica> chunks;
        std::unordered_map<ChunkId, std::pair<std::size_t, int>> located;  ///< size, home rank (-1: none yet)
        std::unordered_set<ChunkId> freed;
        std::unordered_map<std::uint32_t, std::string> broken_locks;
    };
    std::map<int, ReplicaSet> replicas;     ///< by the copying server's rank
    std::unordered_set<ChunkId> freed_ids;  ///< taken-over chunks freed before: a free sent again is answered
    struct Report {                         ///< one client's copy of one chunk of the dead server
        int client = -1;
        proto::CState state = proto::CState::I;
        std::uint64_t version = 0;
        std::size_t size = 0;
        bool publish = false;
        bool subscribed = false;
        bool update = false;
        std::shared_ptr<net::Bytes> data;  ///< the message, when bytes of `version` came
    };
    struct Recovery {
        std::vector<bool> due;  ///< by client index: its report_done is awaited
        std::unordered_map<ChunkId, std::vector<Report>> chunks;
        std::vector<std::pair<std::uint32_t, int>> locks;  ///< (lock id, holder rank)
    };
    std::map<int, Recovery> recoveries;  ///< by the dead server's rank
    std::deque<Incoming> held_back;      ///< requests that wait until every recovery is done
    std::optional<Error> deposed;        ///< this server was declared dead by its keeper

    /// Copies to this server's keeper (nothing without one).
    void replicate(wire::ReplicaKind kind, ChunkId id, std::uint64_t size, std::uint64_t version,
                   std::span<const std::byte> payload = {});
    void replicate_chunk(ChunkId id, const HomeChunk& hc);
    /// Everything this server keeps, to a new keeper.
    void replicate_all();
    /// Replication's messages (replica, recover, report*); held-back requests during a recovery.
    /// True when the message was taken.
    bool server_replication_handle(Incoming& in);
    void server_take_replica(const Incoming& in);
    void server_take_report(const Incoming& in);
    void server_learn_failure(int server);
    void server_watch_primaries();
    void start_recovery(int dead);
    /// Takes over the chunks of every dead server whose clients all reported; then replays the
    /// requests held back meanwhile.
    void finish_recoveries();
    void take_over(int dead, Recovery& r);

    /// The direct data path is in force (Options::direct_data, without replication or super-peers).
    [[nodiscard]] bool direct_path() const {
        return options.direct_data && !options.replication && super_peers.empty();
    }

    // client side
    std::unordered_map<ChunkId, bool> subscriptions;  ///< chunk -> update_on_write (guarded by mu)
    /// Direct path: per subscribed chunk, the order notifications are handed on in (mu).
    std::unordered_map<ChunkId, NotifyOrder<Notification>> notify_order;
    /// Hands a notification on (direct path: in version order, see notify_order.hpp); mu held.
    void take_notification(Notification n);
    /// Queues notifications NotifyOrder says are in order, for wait_notification(); mu held.
    void hand_on(std::vector<Notification> ready);
    /// How a writer means to use the chunk's bytes (acquire_write or acquire_overwrite).
    enum class Access : std::uint8_t { read, write, overwrite };
    /// `c` once acquired: for writing, with a buffer of its own (own_bytes); mu held.
    Result<CacheChunk*> writable_if(Access access, CacheChunk& c);
    /// Makes `c`'s buffer this entry's alone: while a send in flight still has it, the spare
    /// (or a new buffer) takes its place, the bytes copied over when `keep`; mu held.
    Result<void> own_bytes(CacheChunk& c, bool keep = true);
    /// Sends `o` with `c`'s bytes from its buffer, header written in front; mu held.
    Result<void> post_bytes(int dest, ChunkId id, CacheChunk& c, const proto::Message& o);
    /// A notify or sub_ack (mu held).
    void client_take_subscription_news(Incoming& in, const proto::Message& m);
    /// This client released `version` of `id` itself (direct path: its place in the order); mu held.
    void took_own_release(ChunkId id, std::uint64_t version);
    struct Sent {
        int home = -1;
        std::uint64_t version = 0;
    };
    std::unordered_map<ChunkId, Sent> sent_data;  ///< the last version this client sent a home (mu)
    /// Server `server` died: routes to its keeper, reports every copy and lock of its chunks there,
    /// then sends the requests it was waiting on again (mu held). False: no keeper is left.
    bool fail_over(int server);
    void report_to_keeper(int dead, int to, ChunkId id, const CacheChunk* c);
    void resend_to_keeper(int dead, int to, const std::vector<ChunkId>& moved);

    // ---- server (server.cpp) ----
    std::unordered_map<ChunkId, HomeChunk> homes;
    struct Located {
        std::size_t size = 0;
        int home = -1;
    };
    std::unordered_map<ChunkId, Located> located;  // first-touch chunks this server locates
    struct LockState {
        int holder = -1;  // rank
        std::deque<int> waiters;
        std::string broken;
    };
    std::unordered_map<std::uint32_t, LockState> locks;
    std::vector<bool> client_left;
    std::vector<bool> client_dead;

    Result<void> serve();
    void server_handle(Incoming& in);
    void server_protocol(Incoming& in);
    void server_apply(ChunkId id, HomeChunk& hc, const proto::Message& m, std::span<const std::byte> payload,
                      const std::shared_ptr<net::Bytes>& incoming = nullptr);
    void server_reply_error(int rank, int for_kind, ChunkId id, Errc code, const std::string& text);
    void server_watch();
    void server_declare_dead(int client);
    /// What a client that ended leaves behind (`why` names it, `ended` is "died" or "left"):
    /// its subscriptions and queued requests dropped, what only it held marked lost (its
    /// waiters answered broken), its locks broken; the rest answered as it would have.
    void server_forget_client(int client, const std::string& why, std::string_view ended);
    void server_lock(Incoming& in);
    /// Super-peer: passes a client's request on to the server it is for
    /// (the chunk's home or locator, or the lock's server); false when this
    /// server takes it itself.
    bool server_pass_on(Incoming& in);

    // ---- client (client.cpp) ----
    mutable std::mutex mu;
    std::condition_variable cv;
    std::unordered_map<ChunkId, CacheChunk> cache;
    std::deque<Notification> notes;
    std::map<std::pair<int, std::uint64_t>, Pending> waits;  // (kind, chunk or lock id)
    // Locks this client holds or asks for: the server cannot answer an unlock
    // (it is one-way) and would queue a relock behind the client itself.
    std::set<std::uint32_t> locks_held;
    std::set<std::uint32_t> locks_asked;
    std::atomic<std::uint64_t> next_counter{1};
    std::atomic<bool> stop{false};
    std::thread progress;
    bool left = false;
    std::optional<Error> progress_error;
    /// Deaths other ranks told of (Kind::dead), guarded by mu. A rank that
    /// finds a peer dead tells the clients before its call fails, so that a
    /// survivor that then finds that rank gone (it failed, and ended) names the
    /// death that began it. A notice only names; it never makes a rank dead
    /// here: the teller's link to it may be all that failed.
    struct Told {
        int rank = -1;
        std::string error;  ///< the finder's message, "(found by rank S)" added
    };
    std::optional<Told> told;                   ///< the first notice, or this client's own finding
    std::optional<std::string> barrier_broken;  ///< a client gave up its barriers on this death
    bool announced = false;                     ///< this client told the others of a death

    void start_progress();
    void stop_progress();
    void progress_loop();
    void client_handle(Incoming& in);
    /// A server's error reply: fails the acquisition or the wait it answers.
    void client_take_error(const Incoming& in);
    /// Sends the protocol step's messages for `id` (caller holds mu).
    Result<void> client_send(ChunkId id, CacheChunk& c, const proto::Step& st);
    /// Waits on cv until pred() or the peer `rank` stops answering.
    template <class Pred>
    Result<void> wait_for_peer(std::unique_lock<std::mutex>& lock, int rank, std::string_view what, Pred pred);
    Result<void> check_chunk_id(std::string_view op, ChunkId id) const;
    Result<CacheChunk*> acquire(std::string_view op, ChunkId id, Access access);
    /// acquire(), then the chunk's bytes (acquire_read, acquire_write, acquire_overwrite).
    Result<std::span<std::byte>> acquire_bytes(std::string_view op, ChunkId chunk, Access access);
    Result<void> wait_reply(std::string_view op, int kind, std::uint64_t key, int rank);
    /// The error of a wait (`what`) that found `rank` dead (caller holds mu via
    /// `lock`): a death another rank told of first, else this one; the first
    /// time, it is told to every other live client (sent before this returns).
    Error peer_lost(std::unique_lock<std::mutex>& lock, int rank, std::string_view what, std::string error);
    /// Records a client's Kind::dead notice (progress thread, mu held).
    void take_dead_notice(const Incoming& in);
    /// Posts a Kind::dead notice of rank `dead` (`why`: the finder's message)
    /// to every client but this rank, those found dead and (on a server) those
    /// that left.
    void post_dead_notice(int dead, std::string_view why);
};

/// Sleeps a little longer each time nothing arrived, up to 100 us, so that an
/// idle rank does not take a core from the busy ones. Idle for longer than
/// kDozeAfter with nothing in flight, it dozes on the transport's doorbell for up
/// to kDozeFor instead: a rank of its node that posts to it wakes it at once,
/// and a remote peer's message waits at most that long (the video pipeline's
/// gateway ran four pollers waking 30,000 times a second, which took the
/// worker's core; docs/dsm.md, "Transport").
///
/// With `batch`, the polling thread runs at SCHED_BATCH while the Backoff lives
/// (core::BatchPolicy): its wakeups then queue behind the thread running on the
/// core instead of preempting it, so a rank's compute keeps its slices while the
/// node's pollers wait their turn (at the normal policy the video gateway's
/// worker was preempted ten times as often as ZeroMQ's; docs/dsm.md, "Transport").
class Backoff {
public:
    static constexpr std::chrono::microseconds kDozeAfter{200};
    static constexpr std::chrono::microseconds kDozeFor{1000};
    /// `net`: the transport to doze on (null: sleeps only); `doze`: whether to doze on it.
    Backoff(Transport* net, bool doze, bool batch);
    void idle();
    void reset() { spins_ = 0; }

private:
    Transport* net_ = nullptr;
    core::BatchPolicy batch_;
    int spins_ = 0;
    Clock::time_point since_{};
};

}  // namespace strata::dsm
