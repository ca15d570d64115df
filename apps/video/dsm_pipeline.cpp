// SPDX-License-Identifier: MIT
// The DSM implementations (pipeline.hpp) over libstrata-dsm: ranks
// 0..S-1 serve (S = --dsm-servers), then the input, the output and the
// workers are the DSM's clients 0, 1, 2...
//
// As the paper: every worker w has an input chunk in[w] and an output chunk
// out[w] (a Header then the frame's bytes). The input writes a frame into the
// in[w] of a worker with a credit and releases it; the worker, subscribed to
// in[w], is notified, filters into out[w] and releases it; the output,
// subscribed to every out[w], is notified, puts the frames back in order
// and encodes them. The homes of in[w] and out[w] are server w % S (with one
// server per node: the worker's own node).
//
//   dsm          notifications carry the data (update-on-write): no acquire to
//                read; the input learns a worker's credit from out[w]'s
//                notification; --credits frames in flight per worker (default 1)
//   dsm-acquire  notifications without data: readers acquire the chunk (the
//                paper's access pattern); one frame in flight per worker, and
//                the output hands the credit back through a small ack[w] chunk
//                once it read out[w]
//
// Control: the input's chunk ctl_in (frame count, or abort) and the output's
// ctl_out (complete, or abort); every client subscribes to the other's.
#include <mpi.h>

#include <cstring>
#include <deque>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "hydra_notice.hpp"
#include "mpi_link.hpp"
#include "pipeline.hpp"
#include "roles.hpp"
#include "server_abort.hpp"
#include "strata/dsm.hpp"

namespace strata::video {

namespace {

using dsm::ChunkId;

constexpr int max_workers = 62;  // the DSM's 64 clients, less the input and the output

/// What the input tells every client at the start (MPI_Ibcast on the clients' communicator).
struct Setup {
    std::int32_t ok = 0;
    std::int32_t width = 0;
    std::int32_t height = 0;
    std::int32_t rate_num = 0;
    std::int32_t rate_den = 0;
    std::int64_t frames = 0;  ///< expected, for the output's progress line (0: unknown)
    ChunkId ctl_in = 0;
    ChunkId ctl_out = 0;
    ChunkId in[max_workers] = {};
    ChunkId out[max_workers] = {};
    ChunkId ack[max_workers] = {};
    char error[400] = {};
};

struct Run {
    Context& ctx;
    dsm::Node& node;
    bool acquire_mode;
    Setup setup;
    int workers = 0;
    [[nodiscard]] std::chrono::milliseconds timeout() const {
        return std::chrono::milliseconds(ctx.options.timeout_ms);
    }
    [[nodiscard]] StreamInfo info() const {
        return {setup.width, setup.height, setup.rate_num, setup.rate_den, setup.frames};
    }
    [[nodiscard]] std::size_t chunk_bytes() const { return sizeof(Header) + info().frame_bytes(); }
};

Error named(const Error& e, const std::string& what) {
    return Error{e.code, what + ": " + e.message, e.sys_errno};
}

/// Writes `h` (and, through `fill`, the bytes after it) into a chunk. Readers read the header and
/// then only what its kind says was written, so the chunk's old bytes are not needed: no copy of
/// them while the last release's send is still in flight (acquire_overwrite).
Result<void> write_chunk(Run& run, ChunkId id, const Header& h,
                         const std::function<Result<void>(std::span<std::uint8_t>)>& fill, const std::string& what) {
    auto span = run.node.acquire_overwrite(id);
    if (!span) return std::unexpected(named(span.error(), "acquire_overwrite of " + what));
    Header copy = h;
    copy.from = run.ctx.rank;
    std::memcpy(span->data(), &copy, sizeof copy);
    Result<void> filled;
    if (fill) {
        auto* bytes = reinterpret_cast<std::uint8_t*>(span->data());
        filled = fill(std::span<std::uint8_t>(bytes + sizeof(Header), span->size() - sizeof(Header)));
    }
    auto released = run.node.release(id);
    if (!filled) return filled;
    if (!released) return std::unexpected(named(released.error(), "release of " + what));
    return {};
}

Header header_of(std::span<const std::byte> bytes) {
    Header h;
    if (bytes.size() >= sizeof h) std::memcpy(&h, bytes.data(), sizeof h);
    return h;
}

/// The bytes of a notified chunk: the pushed snapshot, or (dsm-acquire) the chunk acquired for reading.
struct Reading {
    Reading(Run& r, ChunkId chunk) : run(r), id(chunk) {}
    Run& run;
    ChunkId id;
    bool acquired = false;
    std::span<const std::byte> bytes;
    Reading(const Reading&) = delete;
    Reading& operator=(const Reading&) = delete;
    ~Reading() { close(); }
    void close() {
        if (acquired) (void)run.node.release(id);
        acquired = false;
    }
};

Result<void> open_reading(Reading& r, const dsm::Notification& n) {
    if (!r.run.acquire_mode || n.has_data) {
        r.bytes = n.data();
        return {};
    }
    auto span = r.run.node.acquire_read(r.id);
    if (!span) return std::unexpected(named(span.error(), fmt::format("acquire_read of chunk {:#x}", r.id)));
    r.acquired = true;
    r.bytes = *span;
    return {};
}

Result<dsm::Notification> next_note(Run& run, const std::string& what, const std::function<std::string()>& more,
                                    int patience = 1) {
    const double t0 = now_s();
    auto n = run.node.wait_notification(patience * run.timeout());
    run.ctx.stats.wait_s += now_s() - t0;
    if (!n) {
        if (n.error().code == Errc::timeout) {
            const std::string extra = more ? more() : std::string();
            return make_error(Errc::timeout, "waited {} ms for {}: the peer is dead or stopped answering{}{}",
                              patience * run.ctx.options.timeout_ms, what, extra.empty() ? "" : "; ", extra);
        }
        return std::unexpected(named(n.error(), "waiting for " + what));
    }
    return n;
}

Result<void> aborted_if(Run& run, const dsm::Notification& n, bool& by_peer) {
    if (n.chunk != run.setup.ctl_in && n.chunk != run.setup.ctl_out) return {};
    Reading r{run, n.chunk};
    if (auto o = open_reading(r, n); !o) return o;
    const Header h = header_of(r.bytes);
    if (h.kind == Kind::abort) {
        by_peer = true;
        return make_error(Errc::peer_dead, "the job was aborted by {}", h.get_text());
    }
    return {};
}

Result<void> run_input(Run& run, InputTask& input, bool& by_peer) {
    Context& ctx = run.ctx;
    const StreamInfo info = run.info();
    const int per_worker = run.acquire_mode ? 1 : ctx.options.credits;
    std::deque<int> credits;
    for (int c = 0; c < per_worker; ++c) {
        for (int w = 0; w < run.workers; ++w) credits.push_back(w);
    }
    std::vector<std::int64_t> sent(static_cast<std::size_t>(run.workers), 0);
    const int first_worker_rank = ctx.options.dsm_servers + 2;
    Holders holders(run.workers);
    bool complete = false;
    auto describe = [&] {
        std::string s;
        for (int w = 0; w < run.workers; ++w) {
            s += fmt::format("{}worker {} ({}): {} frames sent", w == 0 ? "" : ", ", w, ctx.peer(w + first_worker_rank),
                             sent[static_cast<std::size_t>(w)]);
        }
        return s;
    };
    auto handle = [&](const std::string& what) -> Result<void> {
        auto n = next_note(run, what, describe);
        if (!n) {
            if (auto c = holders.check(ctx, first_worker_rank); !c) return c;  // the cause, not the wait it ended
            return std::unexpected(n.error());
        }
        if (auto a = aborted_if(run, *n, by_peer); !a) return a;
        if (n->chunk == run.setup.ctl_out) {
            Reading r{run, n->chunk};
            if (auto o = open_reading(r, *n); !o) return o;
            complete = header_of(r.bytes).kind == Kind::complete;
            return {};
        }
        for (int w = 0; w < run.workers; ++w) {
            const auto i = static_cast<std::size_t>(w);
            if (n->chunk == (run.acquire_mode ? run.setup.ack[i] : run.setup.out[i])) {
                credits.push_back(w);
                holders.heard(w);
                return {};
            }
        }
        return make_error(Errc::corrupted, "a notification for chunk {:#x}, which the input did not subscribe to",
                          n->chunk);
    };
    for (;;) {
        auto got = input.decode();
        if (!got) return std::unexpected(got.error());
        if (!*got) break;
        const std::int64_t index = input.decoded() - 1;
        while (credits.empty()) {
            if (auto r = handle(fmt::format("a worker to take frame {}", index)); !r) return r;
        }
        if (auto c = holders.check(ctx, first_worker_rank); !c) return c;
        const int w = credits.front();
        credits.pop_front();
        Header job{.kind = Kind::job, .index = index};
        job.worker = w;
        job.width = info.width;
        job.height = info.height;
        if (auto r = write_chunk(
                run, run.setup.in[static_cast<std::size_t>(w)], job,
                [&](std::span<std::uint8_t> into) { return input.convert(into); },
                fmt::format("in[{}] (frame {})", w, index));
            !r) {
            return r;
        }
        ++sent[static_cast<std::size_t>(w)];
        holders.sent(w);
    }
    if (auto r = write_chunk(run, run.setup.ctl_in, Header{.kind = Kind::end, .count = input.decoded()}, {}, "ctl_in");
        !r) {
        return r;
    }
    while (!complete) {
        if (auto r = handle("the output to confirm every frame"); !r) return r;
        if (auto c = holders.check(ctx, first_worker_rank); !c) return c;
    }
    return {};
}

Result<void> run_worker(Run& run, bool& by_peer) {
    Context& ctx = run.ctx;
    WorkerTask task(ctx);
    const auto w = static_cast<std::size_t>(ctx.worker);
    const StreamInfo info = run.info();
    for (;;) {
        auto n = next_note(run, fmt::format("a frame from the input ({})", ctx.peer(ctx.options.dsm_servers)), {}, 2);
        if (!n) return std::unexpected(n.error());
        if (auto a = aborted_if(run, *n, by_peer); !a) return a;
        if (n->chunk == run.setup.ctl_out) break;    // complete
        if (n->chunk == run.setup.ctl_in) continue;  // the frame count: the output's business
        if (n->chunk != run.setup.in[w]) {
            return make_error(Errc::corrupted, "a notification for chunk {:#x}, not this worker's", n->chunk);
        }
        Reading r{run, n->chunk};
        if (auto o = open_reading(r, *n); !o) return o;
        const Header job = header_of(r.bytes);
        if (job.kind != Kind::job || r.bytes.size() != run.chunk_bytes()) {
            return make_error(Errc::corrupted, "in[{}] holds a {} message of {} bytes", w, to_string(job.kind),
                              r.bytes.size());
        }
        ctx.first_frame();
        const auto* pixels = reinterpret_cast<const std::uint8_t*>(r.bytes.data()) + sizeof(Header);
        Header res{.kind = Kind::result, .index = job.index};
        res.worker = ctx.worker;
        auto written = write_chunk(
            run, run.setup.out[w], res,
            [&](std::span<std::uint8_t> into) -> Result<void> {
                task.process({pixels, info.frame_bytes()}, into, info);
                return {};
            },
            fmt::format("out[{}] (frame {})", w, job.index));
        if (!written) return written;
    }
    return {};
}

Result<void> run_output(Run& run, OutputTask& output, bool& by_peer) {
    if (auto s = output.start(run.info()); !s) return s;
    auto describe = [&] { return output.missing(); };
    while (!output.done()) {
        auto n = next_note(run, "results from the workers", describe);
        if (!n) return std::unexpected(n.error());
        if (auto a = aborted_if(run, *n, by_peer); !a) return a;
        Reading r{run, n->chunk};
        if (auto o = open_reading(r, *n); !o) return o;
        const Header h = header_of(r.bytes);
        if (n->chunk == run.setup.ctl_in) {
            if (h.kind == Kind::end) {
                if (auto t = output.set_total(h.count); !t) return t;
            }
            continue;
        }
        int w = -1;
        for (int i = 0; i < run.workers; ++i) {
            if (n->chunk == run.setup.out[static_cast<std::size_t>(i)]) w = i;
        }
        if (w >= 0 && h.kind == Kind::abort) {
            by_peer = true;  // a worker failed: the output tells the others (ctl_out)
            return make_error(Errc::peer_dead, "the job was aborted by {}", h.get_text());
        }
        if (w < 0 || h.kind != Kind::result || r.bytes.size() != run.chunk_bytes()) {
            return make_error(Errc::corrupted, "a notification for chunk {:#x} holding a {} message", n->chunk,
                              to_string(h.kind));
        }
        const auto* pixels = reinterpret_cast<const std::uint8_t*>(r.bytes.data()) + sizeof(Header);
        if (auto a = output.accept_view(h.index, {pixels, run.info().frame_bytes()}); !a) return a;
        if (run.acquire_mode) {
            r.close();  // out[w] is released before its credit goes back
            if (auto k = write_chunk(run, run.setup.ack[static_cast<std::size_t>(w)], Header{.kind = Kind::ready}, {},
                                     fmt::format("ack[{}]", w));
                !k) {
                return k;
            }
        }
    }
    if (auto f = output.finish(); !f) return f;
    return write_chunk(run, run.setup.ctl_out, Header{.kind = Kind::complete, .count = output.written()}, {},
                       "ctl_out");
}

/// Client 0 allocates every chunk and fills `setup`; the error text travels in it when that fails.
Result<void> allocate_chunks(Run& run, InputTask* input) {
    Setup& s = run.setup;
    if (input == nullptr) return {};
    const StreamInfo info = input->info();
    s.width = info.width;
    s.height = info.height;
    s.rate_num = info.rate_num;
    s.rate_den = info.rate_den;
    s.frames = info.frames;
    const int servers = run.ctx.options.dsm_servers;
    auto chunk = [&](std::size_t bytes, int server, ChunkId& id, const std::string& what) -> Result<void> {
        auto a = run.node.allocate(bytes, dsm::HomePolicy::node(server));
        if (!a) return std::unexpected(named(a.error(), "allocate " + what));
        id = *a;
        return {};
    };
    if (auto r = chunk(sizeof(Header), 0, s.ctl_in, "ctl_in"); !r) return r;
    if (auto r = chunk(sizeof(Header), 0, s.ctl_out, "ctl_out"); !r) return r;
    for (int w = 0; w < run.workers; ++w) {
        const auto i = static_cast<std::size_t>(w);
        if (auto r = chunk(run.chunk_bytes(), w % servers, s.in[i], fmt::format("in[{}]", w)); !r) return r;
        if (auto r = chunk(run.chunk_bytes(), w % servers, s.out[i], fmt::format("out[{}]", w)); !r) return r;
        if (run.acquire_mode) {
            if (auto r = chunk(sizeof(Header), 0, s.ack[i], fmt::format("ack[{}]", w)); !r) return r;
        }
    }
    return {};
}

Result<void> subscribe_all(Run& run) {
    Context& ctx = run.ctx;
    const Setup& s = run.setup;
    const dsm::SubscribeOptions data{.update_on_write = !run.acquire_mode};
    auto sub = [&](ChunkId id, dsm::SubscribeOptions o, const std::string& what) -> Result<void> {
        if (auto r = run.node.subscribe(id, o); !r) return std::unexpected(named(r.error(), "subscribe to " + what));
        return {};
    };
    if (ctx.role != Role::input) {
        if (auto r = sub(s.ctl_in, {.update_on_write = true}, "ctl_in"); !r) return r;
    }
    if (ctx.role != Role::output) {
        if (auto r = sub(s.ctl_out, {.update_on_write = true}, "ctl_out"); !r) return r;
    }
    for (int w = 0; w < run.workers; ++w) {
        const auto i = static_cast<std::size_t>(w);
        if (ctx.role == Role::worker && w == ctx.worker) {
            if (auto r = sub(s.in[i], data, fmt::format("in[{}]", w)); !r) return r;
        }
        if (ctx.role == Role::output) {
            if (auto r = sub(s.out[i], data, fmt::format("out[{}]", w)); !r) return r;
        }
        if (ctx.role == Role::input) {
            const ChunkId credit = run.acquire_mode ? s.ack[i] : s.out[i];
            if (auto r = sub(credit, {.update_on_write = false}, fmt::format("the credits of worker {}", w)); !r) {
                return r;
            }
        }
    }
    return {};
}

/// Polls a non-blocking collective for at most --timeout-ms.
Result<void> wait_collective(Context& ctx, MPI_Request& request, const std::string& what) {
    const double until = now_s() + ctx.options.timeout_ms / 1000.0;
    for (;;) {
        int done = 0;
        if (int rc = MPI_Test(&request, &done, MPI_STATUS_IGNORE); rc != MPI_SUCCESS) {
            return make_error(Errc::peer_dead, "{}: {}", what, mpi_error_text(rc));
        }
        if (done != 0) return {};
        if (now_s() > until) {
            return make_error(Errc::timeout, "waited {} ms for {}: a rank of the job failed or stopped answering",
                              ctx.options.timeout_ms, what);
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
}

/// The input's setup outcome, from the input to every rank, servers included (MPI_COMM_WORLD):
/// clients call it after leave(), servers after serve() returned. A server learns this way that
/// the job never started and fails with the input's reason instead of serving on until mpiexec
/// kills it (hydra then reports "BAD TERMINATION ... Killed (signal 9)").
Result<void> share_setup_outcome(Context& ctx, Setup& setup) {
    MPI_Request bcast = MPI_REQUEST_NULL;
    MPI_Ibcast(&setup, sizeof setup, MPI_BYTE, ctx.options.dsm_servers, MPI_COMM_WORLD, &bcast);
    return wait_collective(ctx, bcast, "the input to tell whether the job started");
}

Result<void> serve_and_learn_outcome(Context& ctx, dsm::Node& node, Setup& setup, bool& by_peer) {
    if (auto served = node.serve(); !served) return served;
    if (auto shared = share_setup_outcome(ctx, setup); !shared) return shared;
    if (setup.ok != 0) return {};
    by_peer = true;
    return make_error(Errc::peer_dead, "the input could not start: {}",
                      std::string(setup.error, strnlen(setup.error, sizeof setup.error)));
}

Result<void> run_client(Context& ctx, dsm::Node& node, Setup& setup, bool& by_peer, bool& agreed) {
    Run run{ctx, node, ctx.options.impl == Impl::dsm_acquire, Setup{}};
    run.workers = node.clients() - 2;
    std::optional<InputTask> input;
    std::optional<OutputTask> output;
    Result<void> ready;
    if (ctx.role == Role::input) {
        auto opened = InputTask::open(ctx);
        if (opened) {
            input.emplace(std::move(*opened));
            ready = allocate_chunks(run, &*input);
        } else {
            ready = std::unexpected(opened.error());
        }
        run.setup.ok = ready ? 1 : 0;
        if (!ready) {
            const std::string text = ready.error().what();
            std::memcpy(run.setup.error, text.data(), std::min(text.size(), sizeof run.setup.error - 1));
        }
    }
    if (ctx.role == Role::output) {
        auto created = OutputTask::create(ctx);
        if (!created) return std::unexpected(created.error());
        output.emplace(std::move(*created));
    }
    MPI_Request bcast = MPI_REQUEST_NULL;
    MPI_Ibcast(&run.setup, sizeof run.setup, MPI_BYTE, 0, node.clients_comm(), &bcast);
    if (auto r = wait_collective(ctx, bcast, "the input (DSM client 0) to set up the chunks"); !r) return r;
    setup = run.setup;
    agreed = true;
    if (run.setup.ok == 0) {
        if (ctx.role == Role::input) return ready;
        by_peer = true;
        return make_error(Errc::peer_dead, "the input could not start: {}",
                          std::string(run.setup.error, strnlen(run.setup.error, sizeof run.setup.error)));
    }
    if (auto r = subscribe_all(run); !r) return r;
    if (auto b = node.barrier(); !b) return std::unexpected(named(b.error(), "barrier after subscribing"));
    ctx.start = std::chrono::steady_clock::now();
    switch (ctx.role) {
        case Role::input: return run_input(run, *input, by_peer);
        case Role::output: return run_output(run, *output, by_peer);
        default: return run_worker(run, by_peer);
    }
}

/// Tells the other clients that the job failed (best effort): the input through ctl_in, the
/// output through ctl_out, a worker through its out[w] (the output passes it on); and the
/// servers, which read no chunk, through `failure_comm` (server_abort.hpp).
void abort_others(Context& ctx, dsm::Node& node, const Setup& setup, const std::string& why, MPI_Comm failure_comm) {
    if (setup.ok == 0) return;  // the chunks do not exist
    Run run{ctx, node, false, setup};
    Header a{.kind = Kind::abort};
    a.set_text(fmt::format("rank {} ({}, node {}): {}", ctx.rank, to_string(ctx.role), ctx.options.node, why));
    const ChunkId id = ctx.role == Role::input    ? setup.ctl_in
                       : ctx.role == Role::output ? setup.ctl_out
                                                  : setup.out[static_cast<std::size_t>(ctx.worker)];
    (void)write_chunk(run, id, a, {}, "the abort notice");
    tell_servers(ctx.options.dsm_servers, failure_comm, a);
}

std::string traffic_json(const dsm::Traffic& t) {
    std::string s = "{";
    for (std::size_t i = 0; i < t.kinds.size(); ++i) {
        if (t.sent[i].messages == 0 && t.received[i].messages == 0) continue;
        // shared: of sent, the messages handed to a rank of the same node by reference, and their bytes
        // (not in sent_bytes, which counts what MPI carried: docs/dsm.md, "Same-node data").
        s += fmt::format(
            "{}\"{}\": {{\"sent\": {}, \"sent_bytes\": {}, \"received\": {}, \"received_bytes\": {}, "
            "\"shared\": {}, \"shared_bytes\": {}}}",
            s.size() > 1 ? ", " : "", t.kinds[i], t.sent[i].messages, t.sent[i].bytes, t.received[i].messages,
            t.received[i].bytes, t.shared[i].messages, t.shared[i].bytes);
    }
    return s + "}";
}

}  // namespace

int run_dsm(const Options& options) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    Context ctx(options);
    MPI_Comm_rank(MPI_COMM_WORLD, &ctx.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ctx.size);
    const int servers = options.dsm_servers;
    const int clients = ctx.size - servers;
    if (clients < 3 || clients - 2 > max_workers) {
        if (ctx.rank == 0) {
            ctx.error(
                fmt::format("--dsm-servers={}: with {} ranks this leaves {} clients; the pipeline needs 3 to {} "
                            "(input, output, 1 to {} workers)",
                            servers, ctx.size, clients, max_workers + 2, max_workers));
        }
        MPI_Finalize();
        return 2;
    }
    ctx.role = ctx.rank < servers        ? Role::server
               : ctx.rank == servers     ? Role::input
               : ctx.rank == servers + 1 ? Role::output
                                         : Role::worker;
    ctx.worker = ctx.role == Role::worker ? ctx.rank - servers - 2 : -1;
    ctx.started();
    exit_on_hydra_notice(ctx);
    const bool across_nodes = spans_nodes(ctx);
    learn_nodes(ctx);
    MPI_Comm failure_comm = MPI_COMM_NULL;  // a job that never started ends on every rank together
    MPI_Comm_dup(MPI_COMM_WORLD, &failure_comm);
    MPI_Comm_set_errhandler(failure_comm, MPI_ERRORS_RETURN);
    // A job that failed after it started: its clients leave together, so that each has printed the
    // abort it received before plain mpiexec kills the rest (the servers are not told).
    MPI_Comm clients_failure_comm = MPI_COMM_NULL;
    MPI_Comm_split(failure_comm, ctx.role == Role::server ? MPI_UNDEFINED : 0, ctx.rank, &clients_failure_comm);
    auto node = dsm::Node::join(MPI_COMM_WORLD, {.servers = servers,
                                                 .timeout = std::chrono::milliseconds(options.timeout_ms),
                                                 .heartbeat = std::chrono::milliseconds(options.heartbeat_ms)});
    if (!node) {
        ctx.error(node.error().what());
        ctx.exit_now(1);
    }
    Result<void> r;
    bool by_peer = false;
    Setup setup;
    bool agreed = false;          // every client has the input's setup outcome
    bool agreed_failure = false;  // every rank knows the job did not start
    if (ctx.role == Role::server) {
        const ServerAbortWatch watch(ctx, failure_comm);
        r = serve_and_learn_outcome(ctx, *node, setup, by_peer);
        agreed_failure = !r && by_peer;
    } else {
        r = run_client(ctx, *node, setup, by_peer, agreed);
        if (r) {
            if (auto left = node->leave(); !left) r = std::unexpected(named(left.error(), "leave"));
        }
        if (r) {
            r = share_setup_outcome(ctx, setup);
        } else if (agreed && setup.ok == 0) {
            // Every client knows the job did not start and none died: leave together, so the servers
            // stop serving and fail with the input's reason.
            agreed_failure = node->leave() && share_setup_outcome(ctx, setup);
        }
    }
    ctx.stats.total_s = ctx.elapsed();
    if (!r) {
        ctx.error(r.error().what());
        if (!by_peer && ctx.role != Role::server) abort_others(ctx, *node, setup, r.error().message, failure_comm);
        if (agreed_failure) {
            leave_together_on(failure_comm);
        } else if (ctx.role != Role::server && setup.ok != 0) {
            leave_together_on(clients_failure_comm);
        }
        ctx.exit_now(1);
    }
    // finish_rank ends the process without the node's destructor: the log is written here, after
    // leave() (clients) or serve() (servers), while every rank still waits for the others.
    if (auto logged = node->write_event_log(); !logged) {
        ctx.error(logged.error().what());
    }
    const dsm::Traffic t = node->traffic();
    const dsm::TrafficCount sent = t.total_sent();
    ctx.stats.messages_sent = sent.messages;
    // Bytes handed to other ranks, as ZeroMQ and MPI count theirs: a same-node message by reference
    // counts its bytes (and the 64-byte reference MPI carried for it).
    ctx.stats.bytes_sent = sent.bytes;
    for (const auto& c : t.shared) {
        ctx.stats.bytes_sent += c.bytes;
    }
    ctx.stats.messages_received = 0;
    ctx.stats.bytes_received = 0;
    for (const auto& c : t.received) {
        ctx.stats.messages_received += c.messages;
        ctx.stats.bytes_received += c.bytes;
    }
    if (auto s = ctx.write_stats(fmt::format("{{\"dsm_traffic\": {}}}", traffic_json(t))); !s) {
        ctx.error(s.error().what());
    }
    finish_rank(ctx, MPI_COMM_WORLD, across_nodes);
}

}  // namespace strata::video
