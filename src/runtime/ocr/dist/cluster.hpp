// SPDX-License-Identifier: MIT
// The distributed OCR runtime (docs/runtime.md, "Distributed OCR"): one rank
// of an MPI job is one policy domain. A Cluster is this rank's view of the
// others: the wire to them (wire.hpp, libstrata-ocr-dist.so), a communication
// thread that receives and handles their messages, liveness, the job-wide
// shutdown, and what the protocol keeps between messages (operations waiting
// for their object's creation, finish scopes other ranks report to, calls
// waiting for replies, copies of other ranks' data blocks).
//
// Every operation on an object of another rank is a message to its owner (the
// rank in its GUID, state.hpp). Messages between two ranks arrive in the order
// they were sent; across ranks nothing is ordered, so an operation that
// arrives before the creation of its object (created by a third rank) waits
// for it here.
//
// The outbox: the messages an EDT sends (while a SendBatch lives on its thread,
// api.hpp) to one rank, one after the other, wait in the outbox and go as one
// message (Msg::bundle) when the EDT has ended, so that a remote creation and
// the satisfaction after it cost one hop, not two. Any other send (to another
// rank, a control message: kinds before create_edt, a message over
// kBundledMax, from a thread outside a SendBatch), a call (which waits for its
// reply), ocrPause and ocrLegacyBlockProgress send what waited first, and the
// communication thread sends what waited longer than kOutboxHold (an EDT that
// computes on after sending). So this rank's messages leave in the order they
// were sent, whichever their destinations, as they did one post each: a rank
// that a message reaches through a third one still gets it after what was sent
// to it before.
//
// Thread safety: every member may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "../state.hpp"
#include "codec.hpp"
#include "wire.hpp"

namespace strata::ocr {

/// The bytes of a data block of another rank held here (blocks.cpp), 64-byte aligned.
struct RemoteCopy {
    RemoteCopy(std::uint64_t size, std::uint64_t version);
    ~RemoteCopy();
    RemoteCopy(const RemoteCopy&) = delete;
    RemoteCopy& operator=(const RemoteCopy&) = delete;
    std::byte* data = nullptr;
    std::uint64_t size = 0;
    std::uint64_t version = 0;
    [[nodiscard]] std::span<std::byte> bytes() const { return {data, static_cast<std::size_t>(size)}; }
};

}  // namespace strata::ocr

namespace strata::ocr::dist {

/// How Hydra launched this process: PMI_RANK and PMI_SIZE.
struct Launch {
    int rank = 0;
    int size = 1;
    /// $STRATA_OCR_COMM_BATCH (0 or 1, default 1): while a task runs, the communication thread
    /// runs at SCHED_BATCH (core::BatchPolicy), so that its wakeups do not preempt the workers.
    bool comm_batch = true;
};
/// Where a rank runs: its pid; its machine (host name, boot id and the file
/// system of /dev/shm: ranks of one machine share its CPUs and /dev/shm, and
/// remove what a dead one left there); its network (the machine and the
/// network namespace: an emulated node is a network of its own); where the
/// segments of its shared data blocks go (its segment directory and their
/// names' prefix, db_shared.hpp).
struct Place {
    long pid = 0;
    std::string machine;
    /// The machine and the pid namespace: a rank with the same one is watched
    /// through a pidfd of `pid`, so that its death is known at once (failure.cpp).
    std::string processes;
    std::string network;
    std::string segment_dir;
    std::string segment_prefix;
    std::string node;       ///< $STRATA_NODE (emulated nodes share a host name), else the host name: for errors
    std::vector<int> cpus;  ///< the CPUs it may run on (its affinity): ranks whose sets overlap share them
};
/// This process's place; `job` is OcrOptions::job.
Place this_place(std::string_view job);

/// The launch when Hydra started more than one rank (PMI_SIZE > 1), else nullopt.
/// Errors: PMI variables that are not numbers, or more ranks than GUIDs can name.
Result<std::optional<Launch>> launch_from_env();
/// The CPUs of local rank `local_rank` of `local_size` ranks sharing `cpus`:
/// every local_size-th one from local_rank on (at least one each).
std::vector<int> cpus_of_rank(const std::vector<int>& cpus, int local_rank, int local_size);

/// Idle workers poll the wire too (runtime::IdlePoller): the message an idle
/// rank waits for is handled on the worker that then runs what it made ready,
/// without a hand-over from the communication thread (a futex wake and a
/// context switch per hop on a rank's one CPU).
class Cluster final : public runtime::IdlePoller {
public:
    /// Loads the plugin, opens the wire (MPI_Init_thread) and meets the other
    /// ranks (their pids and hosts); run() then starts the communication thread,
    /// once this rank's runtime runs, on this rank's `cpus` (its workers' CPUs:
    /// on another rank's, its polling would take that rank's worker's time).
    /// Errors: the plugin, MPI, or a rank that did not start within 60 s.
    static Result<std::unique_ptr<Cluster>> start(OcrState& state, const Launch& launch);
    void run(const std::vector<int>& cpus);
    /// This rank among those of its host (by rank), and how many there are.
    [[nodiscard]] int local_rank() const noexcept { return local_rank_; }
    [[nodiscard]] int local_size() const noexcept { return local_size_; }
    /// Ranks of this machine whose CPUs overlap this rank's (itself included).
    [[nodiscard]] int cpu_sharers() const noexcept { return cpu_sharers_; }
    /// Whether the communication thread may poll without sleeping while the workers are idle
    /// (loop()): only when the ranks sharing this rank's CPUs do not outnumber them; else an idle
    /// rank's polling takes the CPU of a busy one (ocr-dist's stencil, 4 ranks on 2 CPUs: 0.40x
    /// MPI's instead of 1.01x).
    void set_spin_when_idle(bool spin) noexcept { spin_when_idle_.store(spin, std::memory_order_relaxed); }
    ~Cluster() override;
    /// runtime::IdlePoller: one poll of the wire and the dispatch of what came,
    /// if no other thread polls at the moment.
    bool poll() noexcept override;
    /// runtime::IdlePoller: while a message moved within kSpinIdle and the
    /// rank's CPUs are its own (set_spin_when_idle).
    [[nodiscard]] bool expecting() const noexcept override;
    Cluster(const Cluster&) = delete;
    Cluster& operator=(const Cluster&) = delete;

    [[nodiscard]] int rank() const noexcept { return rank_; }
    [[nodiscard]] int size() const noexcept { return size_; }
    [[nodiscard]] bool remote(ocrGuid_t guid) const noexcept { return guid.guid > 0 && owner_of(guid) != rank_; }
    [[nodiscard]] OcrState& state() const noexcept { return state_; }

    /// Sends a message; to this rank it is handled at once on the calling thread.
    /// Inside a SendBatch it may wait in the outbox (above).
    void send(int dest, Writer& message);
    /// Sends what the outbox holds.
    void flush_sends();
    /// A message up to this size may wait in the outbox (a creation with 4 KiB of parameters
    /// does); an outbox holding this much is sent at once.
    static constexpr std::size_t kBundledMax = 16 * 1024;
    static constexpr std::size_t kOutboxMax = 64 * 1024;
    static constexpr std::chrono::microseconds kOutboxHold{100};
    /// Mints a GUID of `kind` on `owner` and sends the message `fill` writes for
    /// it, in the owner's counter order (cluster.hpp, "the deferral").
    template <class Fill>
    ocrGuid_t create_on(int owner, Kind kind, Fill&& fill) {
        std::lock_guard lock(mint_mutex_[static_cast<std::size_t>(owner)]);
        const ocrGuid_t guid = state_.table.mint(owner, kind);
        Writer message = fill(guid);
        send(owner, message);
        return guid;
    }
    /// Mints a second GUID on `owner` under the same lock as create_on's (an output event).
    ocrGuid_t mint_more(int owner, Kind kind) { return state_.table.mint(owner, kind); }

    /// Sends a call and waits for its reply (from an EDT: the blocking monitor covers
    /// the core meanwhile). Errors: the owner died or the run ended.
    Result<std::shared_ptr<net::Bytes>> call(int dest, Writer& message, std::uint64_t token);
    std::uint64_t new_token() noexcept { return next_token_.fetch_add(1, std::memory_order_relaxed); }

    /// True when `guid`, an object of this rank minted by another, was not created
    /// yet: its creation message has not arrived (cluster.cpp explains why that is
    /// a safe test). Operations on it then wait with defer().
    [[nodiscard]] bool not_created_yet(ocrGuid_t guid);
    /// Keeps `message` (from `source`) until `guid` is created; false when it was
    /// created meanwhile (the caller handles the message now).
    bool defer(ocrGuid_t guid, int source, std::shared_ptr<net::Bytes> message);
    /// Records the creation of `guid` (minted by another rank) and handles what waited for it.
    void created(ocrGuid_t guid);

    /// Finish scopes other ranks report their proxies' completion to (objects.cpp).
    std::uint64_t export_scope(const std::shared_ptr<FinishScope>& scope);
    std::shared_ptr<FinishScope> import_done(std::uint64_t id);

    /// A remote file name of a call site, kept for the run (CallSite holds a pointer).
    const char* intern(const std::string& file);

    /// Ends the run on this rank: no handler runs after quiesce(); leave() says
    /// bye to every live peer, waits for theirs (bounded), stops the thread and
    /// ends MPI. Returns the exit code (1 if a peer died without saying bye).
    void quiesce();
    int leave(int code);

    /// For blocks.cpp and objects.cpp.
    Wire& wire() noexcept { return *wire_; }
    std::mutex& blocks_mutex() noexcept { return blocks_mutex_; }
    struct Acquisition {
        std::shared_ptr<Edt> edt;
        std::size_t hold = 0;
        std::shared_ptr<RemoteCopy> cached;  // the copy here when asked, if any
    };
    std::unordered_map<std::uint64_t, Acquisition> acquisitions;            // guarded by blocks_mutex()
    std::unordered_map<std::uint64_t, std::shared_ptr<RemoteCopy>> copies;  // guarded by blocks_mutex(): RO/CONST
    std::uint64_t copies_bytes = 0;                                         // guarded by blocks_mutex()
    std::unordered_map<std::uint64_t, std::shared_ptr<Db>> written;  // guarded by blocks_mutex(): remote write holds
    std::uint64_t new_transfer() noexcept { return next_transfer_.fetch_add(1, std::memory_order_relaxed); }
    /// Templates and GUID maps of other ranks, fetched once (meta.cpp).
    std::mutex meta_mutex;
    std::unordered_map<std::uint64_t, std::shared_ptr<EdtTemplate>> templates;  // guarded by meta_mutex
    std::unordered_map<std::uint64_t, std::shared_ptr<GuidMap>> maps;           // guarded by meta_mutex
    std::unordered_map<std::uint64_t, u64> collectives;                         // guarded by meta_mutex

    /// The peer `rank` died: an error naming it (once), told to the others
    /// unless another rank `told` this one; then this rank ends (failure.cpp).
    void peer_died(int rank, const std::string& why, bool told = false);

private:
    Cluster(OcrState& state, std::unique_ptr<Wire> wire, void* plugin, bool comm_batch);
    Result<void> meet();
    void loop();
    // outbox.cpp
    struct Outbox {
        int dest = -1;
        std::vector<std::shared_ptr<net::Bytes>> queued;
        std::size_t bytes = 0;                        // of queued
        std::chrono::steady_clock::time_point since;  // the first queued
    };
    /// A post that failed: its destination is dead (peer_died, after send_mutex_ is released).
    struct Failed {
        int dest = -1;
        std::string why;
    };
    /// Posts what the outbox holds as one message; send_mutex_ held.
    void post_queued_locked(Failed& failed);
    void post_locked(int dest, std::shared_ptr<net::Bytes> message, Failed& failed);
    /// Sends what the outbox holds if its first message waited longer than `hold`.
    void flush_older_than(std::chrono::microseconds hold);
    /// A bundle's messages, each handled as if it came alone.
    void unbundle(int source, const net::Bytes& bundle);
    /// One poll of the wire and the dispatch of what it returned; poll_mutex_ held.
    Result<bool> poll_and_dispatch_locked();
    void dispatch(int source, const std::shared_ptr<net::Bytes>& message);
    /// Runs the handler of one message; false when it must wait for its object's creation.
    bool handle(int source, const std::shared_ptr<net::Bytes>& message);
    // failure.cpp
    void check_peers();
    /// Opens a pidfd of `place`'s process when it shares this rank's processes.
    void watch_process(int rank, const Place& place);
    /// Whether rank `rank`'s process is watched and ended (also a zombie).
    bool process_ended(int rank);
    void on_dead(int source, Reader& in);
    void on_cleaned(int source);
    [[noreturn]] void end_after_death(int dead);
    void clean_up_after(int rank);

    OcrState& state_;
    std::unique_ptr<Wire> wire_;
    void* plugin_ = nullptr;  // the dlopen handle, never closed (MPI stays loaded)
    int rank_ = 0;
    int size_ = 1;
    std::unique_ptr<std::mutex[]> mint_mutex_;
    std::mutex send_mutex_;                   // held from taking a message to its post: posts keep send order
    Outbox outbox_;                           // guarded by send_mutex_
    std::atomic<bool> queued_{false};         // the outbox holds messages
    std::atomic<std::uint64_t> messages_{0};  // sent to other ranks (STRATA_STATS=1: leave() prints them)
    std::atomic<std::uint64_t> posts_{0};     // wire posts that carried them
    int local_rank_ = 0;
    int local_size_ = 0;
    int cpu_sharers_ = 0;
    std::atomic<bool> spin_when_idle_{false};
    bool comm_batch_ = true;   ///< Launch::comm_batch
    bool one_network_ = true;  // every rank in this rank's network (MPI_Finalize is safe)
    std::vector<std::pair<int, std::shared_ptr<net::Bytes>>> backlog_;  // before run()
    std::thread thread_;
    std::atomic<bool> stop_{false};
    std::atomic<std::int64_t> last_sent_{0};      // steady_clock ticks of the last post (loop()'s Backoff)
    std::atomic<std::int64_t> last_received_{0};  // steady_clock ticks of the last message polled
    // Held from a poll of the wire to the end of the dispatch of what it
    // returned, by the communication thread or an idle worker: each sender's
    // messages are handled in the order they came, whichever thread polls.
    std::mutex poll_mutex_;

    std::mutex dispatch_mutex_;   // held while a handler runs: quiesce() waits for it
    bool quiet_ = false;          // guarded by dispatch_mutex_
    std::vector<bool> said_bye_;  // guarded by dispatch_mutex_
    std::atomic<bool> died_{false};
    std::mutex peers_mutex_;
    std::vector<Place> peers_;                                       // guarded by peers_mutex_: of each rank
    std::vector<bool> cleaned_;                                      // guarded by peers_mutex_: after a death
    std::vector<int> pidfds_;                                        // guarded by peers_mutex_: -1 if not watched
    std::chrono::steady_clock::time_point notice_at_{};              // when Hydra said a rank died (comm thread only)
    std::vector<std::chrono::steady_clock::time_point> ended_seen_;  // comm thread only: its pidfd first readable

    std::mutex pending_mutex_;
    std::vector<std::uint64_t> created_up_to_;  // guarded by pending_mutex_: per minting rank
    std::unordered_map<std::uint64_t, std::vector<std::pair<int, std::shared_ptr<net::Bytes>>>>
        pending_;  // guarded by pending_mutex_

    std::mutex scopes_mutex_;
    std::unordered_map<std::uint64_t, std::pair<std::shared_ptr<FinishScope>, std::uint64_t>> scopes_;
    std::uint64_t next_scope_ = 1;

    std::mutex calls_mutex_;
    std::condition_variable calls_cv_;
    struct Waiting {
        int dest = -1;
        std::shared_ptr<net::Bytes> reply;
    };
    std::unordered_map<std::uint64_t, Waiting> calls_;  // guarded by calls_mutex_

    std::mutex files_mutex_;
    std::set<std::string> files_;

    std::atomic<std::uint64_t> next_token_{1};
    std::atomic<std::uint64_t> next_transfer_{1};
    std::mutex blocks_mutex_;
};

/// Hydra's notice that a rank died (SIGUSR1) is noted for the liveness check (failure.cpp).
void watch_hydra_notice();

/// The cluster of the run under way, or nullptr (one rank, or no run).
Cluster* cluster() noexcept;
/// OcrState::finish on this rank: every other rank is told the exit code.
void tell_finish(Cluster& cluster, int code);

// Handlers (objects.cpp, blocks.cpp, meta.cpp); the message's kind byte is read.
void on_create_edt(Cluster& c, int source, Reader& in);
void on_create_db(Cluster& c, int source, Reader& in);
/// The handlers below return false when their object is not created yet (the message waits).
bool on_satisfy(Cluster& c, int source, Reader& in);
bool on_add_dependence(Cluster& c, int source, Reader& in);
bool on_destroy(Cluster& c, int source, Reader& in);
bool on_acquire(Cluster& c, int source, Reader& in);
bool on_collective(Cluster& c, int source, Reader& in);
void on_grant(Cluster& c, int source, Reader& in);
void on_release(Cluster& c, int source, Reader& in);
void on_scope_done(Cluster& c, int source, Reader& in);
void on_call(Cluster& c, int source, Reader& in);

/// A remote write hold on block `guid` here ends without its bytes (the holder destroyed it).
void drop_remote_writer(Cluster& c, ocrGuid_t guid);
/// The bytes of one contribution to COLLECTIVE event `event` of another rank (asked once).
u64 collective_bytes(Cluster& c, ocrGuid_t event);

/// An EDT at labeled GUID `guid` of this rank for `source` (objects.cpp); its
/// output event in *out.
u8 make_labeled_edt(Cluster& c, int source, ocrGuid_t guid, u16 properties, Reader& in, ocrGuid_t* out);
/// A data block at labeled GUID `guid` of another rank (meta.cpp), held by the caller if `acquire`.
u8 create_labeled_db(ocrGuid_t guid, u64 len, u16 flags, DbPlacement placement, bool acquire, const CallSite& site);

/// The GUID an operation message names (for the deferral).
ocrGuid_t target_of(const net::Bytes& message);

}  // namespace strata::ocr::dist
