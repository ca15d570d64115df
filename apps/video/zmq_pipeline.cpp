// SPDX-License-Identifier: MIT
// The ZeroMQ implementations (pipeline.hpp): rank 0 input, rank 1 output,
// ranks 2.. workers, over TCP to --zmq-host (ports P, P+1, P+2).
//
//   zmq         the paper's: each worker (REQ) asks the input for its next frame
//               and gets it in the reply; results go PUSH -> PULL to the output;
//               high-water mark --hwm (10, the paper's)
//   zmq-credit  workers are DEALERs holding --credits requests open, so several
//               frames are in flight per worker (eager scheduling with credits)
//
// The input is a ROUTER in both (a REP that can hold a reply: the final "stop"
// waits until the output confirmed every frame). Control: input PUSH -> output
// PULL (stream info, frame count), output PUSH -> input PULL (complete, abort).
// Ranks come from --rank/--size or from mpiexec's $PMI_RANK/$PMI_SIZE; MPI is
// not used.
#include <cstdlib>
#include <deque>
#include <functional>

#include <fmt/format.h>

#include "hydra_notice.hpp"
#include "pipeline.hpp"
#include "roles.hpp"
#include "zmq_link.hpp"

namespace strata::video {

namespace {

struct Endpoints {
    std::string work;     ///< input ROUTER
    std::string results;  ///< output PULL
    std::string control;  ///< input PULL
};

Endpoints endpoints_of(const Options& o) {
    auto at = [&](int port) { return fmt::format("tcp://{}:{}", o.zmq_host, port); };
    return {at(o.zmq_port), at(o.zmq_port + 1), at(o.zmq_port + 2)};
}

std::string identity_of(int worker) {
    return fmt::format("w{}", worker);
}

struct ZmqContext {
    void* raw = zmq_ctx_new();
    ~ZmqContext() { zmq_ctx_term(raw); }
};

/// Waits for the first of `sockets` to have a message; the index, or an error after --timeout-ms.
Result<int> wait_any(Context& ctx, std::initializer_list<ZmqSocket*> sockets, const std::string& what,
                     const std::function<std::string()>& describe = {}, int patience = 1) {
    std::vector<zmq_pollitem_t> items;
    for (auto* s : sockets) items.push_back({s->raw(), 0, ZMQ_POLLIN, 0});
    const double start = now_s();
    for (;;) {
        const double left = patience * ctx.options.timeout_ms / 1000.0 - (now_s() - start);
        if (left <= 0) {
            const std::string more = describe ? describe() : std::string();
            return make_error(Errc::timeout, "waited {} ms for {}: the peer is dead or stopped answering{}{}",
                              patience * ctx.options.timeout_ms, what, more.empty() ? "" : "; ", more);
        }
        const int n = zmq_poll(items.data(), static_cast<int>(items.size()), static_cast<long>(left * 1000) + 1);
        if (n < 0 && errno != EINTR) {
            return make_error(Errc::io_error, "zmq_poll: {}", zmq_error_text());
        }
        for (std::size_t i = 0; n > 0 && i < items.size(); ++i) {
            if ((items[i].revents & ZMQ_POLLIN) != 0) {
                ctx.stats.wait_s += now_s() - start;
                return static_cast<int>(i);
            }
        }
    }
}

void data_socket(ZmqSocket& s, const Options& o) {
    s.set(ZMQ_SNDHWM, o.hwm);
    s.set(ZMQ_RCVHWM, o.hwm);
}

/// A worker whose result could not reach the output: the input's abort, when one is waiting on
/// the work socket, says why (the output left because the job failed, naming the lost node)
/// better than the stuck send does.
Result<void> aborted_meanwhile(ZmqSocket& work, const Error& stuck, bool& aborted) {
    auto readable = work.wait_readable(0);
    ZmqMessage m;
    if (readable && *readable && work.receive(m, false, false) && m.header.kind == Kind::abort) {
        aborted = true;
        return make_error(Errc::peer_dead, "the job was aborted by {}", m.header.get_text());
    }
    return std::unexpected(stuck);
}

struct WorkerView {
    std::int64_t jobs = 0;
    int credits = 0;
    double last_heard = 0;
    bool heard = false;  ///< connected: a message came from it
    bool stopped = false;
};

Result<void> run_input(Context& ctx, void* zc, bool credit_mode, bool& told_others) {
    const Options& o = ctx.options;
    const Endpoints ep = endpoints_of(o);
    ZmqSocket router(ctx, zc, ZMQ_ROUTER, "input ROUTER " + ep.work);
    data_socket(router, o);
    router.set(ZMQ_ROUTER_MANDATORY, 1);  // a message to a worker that is gone is an error, not dropped
    router.set(ZMQ_ROUTER_HANDOVER, 1);   // a worker that reconnects keeps its routing id
    ZmqSocket control(ctx, zc, ZMQ_PULL, "input PULL " + ep.control);
    ZmqSocket to_output(ctx, zc, ZMQ_PUSH, "input PUSH to the output " + ep.results);
    if (auto r = router.bind(ep.work); !r) return r;
    if (auto r = control.bind(ep.control); !r) return r;
    if (auto r = to_output.connect(ep.results); !r) return r;
    const int workers = ctx.size - first_worker_rank;
    std::vector<WorkerView> view(static_cast<std::size_t>(workers));
    Holders holders(workers);
    std::deque<int> credits;
    bool complete = false;
    auto abort_everyone = [&](const std::string& why) {
        Header a{.kind = Kind::abort};
        a.set_text(fmt::format("rank {} (input, node {}): {}", ctx.rank, o.node, why));
        (void)to_output.send(a, {}, false, nullptr, {}, true);
        for (int w = 0; w < workers; ++w) {
            // A REQ worker can take a reply only to a request it made.
            if (credit_mode || view[static_cast<std::size_t>(w)].credits > 0) {
                (void)router.send(a, identity_of(w), !credit_mode, nullptr, {}, true);
            }
        }
        told_others = true;
    };
    auto fail = [&](const Error& e) -> Result<void> {
        abort_everyone(e.message);
        return std::unexpected(e);
    };
    auto input = InputTask::open(ctx);
    if (!input) return fail(input.error());
    const StreamInfo info = input->info();
    Header hi{.kind = Kind::info};
    hi.width = info.width;
    hi.height = info.height;
    hi.rate_num = info.rate_num;
    hi.rate_den = info.rate_den;
    hi.count = info.frames;  // expected, for the output's progress line (Kind::end has the exact count)
    if (auto s = to_output.send(hi); !s) return fail(s.error());
    for (auto& w : view) w.last_heard = now_s();
    auto describe = [&] {
        std::string s;
        for (int w = 0; w < workers; ++w) {
            const auto& x = view[static_cast<std::size_t>(w)];
            s += x.heard ? fmt::format("{}worker {} ({}): {} frames sent, last heard {:.1f} s ago", w == 0 ? "" : "; ",
                                       w, ctx.peer(w + first_worker_rank), x.jobs, now_s() - x.last_heard)
                         : fmt::format("{}worker {} ({}): never connected", w == 0 ? "" : "; ", w,
                                       ctx.peer(w + first_worker_rank));
        }
        return s;
    };
    auto handle_one = [&](const std::string& what) -> Result<void> {
        auto which = wait_any(ctx, {&router, &control}, what, describe);
        if (!which) return std::unexpected(which.error());
        ZmqMessage m;
        if (*which == 1) {
            if (auto r = control.receive(m, false, false); !r) return r;
            if (m.header.kind == Kind::complete) {
                complete = true;
                return {};
            }
            if (m.header.kind == Kind::abort) {
                return make_error(Errc::peer_dead, "the job was aborted by {}; {}", m.header.get_text(), describe());
            }
            return make_error(Errc::corrupted, "unexpected {} message on the control socket", to_string(m.header.kind));
        }
        if (auto r = router.receive(m, true, !credit_mode); !r) return r;
        const int w = m.header.worker;
        if (w < 0 || w >= workers || m.routing_id != identity_of(w)) {
            return make_error(Errc::corrupted, "a {} message from an unknown peer '{}'", to_string(m.header.kind),
                              m.routing_id);
        }
        auto& x = view[static_cast<std::size_t>(w)];
        x.last_heard = now_s();
        x.heard = true;
        holders.heard(w);
        if (!m.header.get_text().empty())
            ctx.nodes[static_cast<std::size_t>(w + first_worker_rank)] = m.header.get_text();
        if (m.header.kind == Kind::abort) {
            return make_error(Errc::peer_dead, "the job was aborted by {}; {}", m.header.get_text(), describe());
        }
        if (m.header.kind != Kind::ready) {
            return make_error(Errc::corrupted, "unexpected {} message from worker {}", to_string(m.header.kind), w);
        }
        ++x.credits;
        if (!x.stopped) credits.push_back(w);
        return {};
    };
    auto pool = std::make_shared<BufferPool>(info.frame_bytes());
    for (;;) {
        auto got = input->decode();
        if (!got) return fail(got.error());
        if (!*got) break;
        const std::int64_t index = input->decoded() - 1;
        while (credits.empty()) {
            if (auto r = handle_one(fmt::format("a worker to ask for frame {}", index)); !r) return fail(r.error());
        }
        if (auto c = holders.check(ctx, first_worker_rank); !c) return fail(c.error());
        const int w = credits.front();
        credits.pop_front();
        auto& x = view[static_cast<std::size_t>(w)];
        auto* buffer = pool->take();
        if (auto c = input->convert(*buffer); !c) {
            pool->give(buffer);
            return fail(c.error());
        }
        Header job{.kind = Kind::job, .index = index};
        job.worker = w;
        job.set_text(o.node);  // the workers name the input's node in their errors
        job.width = info.width;
        job.height = info.height;
        if (auto s = router.send(job, identity_of(w), !credit_mode, buffer, pool); !s) return fail(s.error());
        --x.credits;
        ++x.jobs;
        holders.sent(w);
    }
    if (auto s = to_output.send(Header{.kind = Kind::end, .count = input->decoded()}); !s) return fail(s.error());
    while (!complete) {
        if (auto r = handle_one("the output (rank 1) to confirm every frame"); !r) return fail(r.error());
        if (auto c = holders.check(ctx, first_worker_rank); !c) return fail(c.error());
    }
    // Every worker is stopped: once it connected (a fast worker may have taken every frame
    // before a slow one even connected, and a ROUTER can only reach a connected peer), and a
    // REQ worker only once it asks again.
    for (int stopped = 0; stopped < workers;) {
        for (int w = 0; w < workers; ++w) {
            auto& x = view[static_cast<std::size_t>(w)];
            if (x.stopped || !x.heard || (!credit_mode && x.credits == 0)) continue;
            if (auto s = router.send(Header{.kind = Kind::stop}, identity_of(w), !credit_mode); !s) {
                return fail(s.error());
            }
            x.stopped = true;
            ++stopped;
        }
        if (stopped < workers) {
            if (auto r = handle_one("every worker to ask for its stop"); !r) return fail(r.error());
        }
    }
    return {};
}

Result<void> run_worker(Context& ctx, void* zc, bool credit_mode, bool& aborted) {
    const Options& o = ctx.options;
    const Endpoints ep = endpoints_of(o);
    ZmqSocket work(ctx, zc, credit_mode ? ZMQ_DEALER : ZMQ_REQ,
                   fmt::format("worker {} {} to the input {}", ctx.worker, credit_mode ? "DEALER" : "REQ", ep.work));
    data_socket(work, o);
    work.set(ZMQ_ROUTING_ID, identity_of(ctx.worker));
    ZmqSocket results(ctx, zc, ZMQ_PUSH, fmt::format("worker {} PUSH to the output {}", ctx.worker, ep.results));
    data_socket(results, o);
    results.set(ZMQ_IMMEDIATE, 1);  // a result waits for a live connection instead of a queue to nowhere
    if (auto r = work.connect(ep.work); !r) return r;
    if (auto r = results.connect(ep.results); !r) return r;
    Header ready{.kind = Kind::ready};
    ready.worker = ctx.worker;
    ready.set_text(o.node);  // the input and the output name this node in their errors
    const int credits = credit_mode ? o.credits : 1;
    for (int i = 0; i < credits; ++i) {
        if (auto s = work.send(ready); !s) return s;
    }
    WorkerTask task(ctx);
    std::shared_ptr<BufferPool> pool;
    for (;;) {
        // The input may itself wait up to --timeout-ms for a failed peer: it is given longer.
        auto which =
            wait_any(ctx, {&work}, fmt::format("a reply from the input ({}, {})", ctx.peer(0), ep.work), {}, 2);
        if (!which) return std::unexpected(which.error());
        ZmqMessage m;
        if (auto r = work.receive(m, false, false); !r) return r;
        if (m.header.kind == Kind::stop) break;
        if (m.header.kind == Kind::abort) {
            aborted = true;
            return make_error(Errc::peer_dead, "the job was aborted by {}", m.header.get_text());
        }
        const StreamInfo info{m.header.width, m.header.height, 0, 0};
        if (m.header.kind != Kind::job || !m.has_frame) {
            return make_error(Errc::corrupted, "unexpected {} message from the input", to_string(m.header.kind));
        }
        if (auto c = check_job(m.header, m.bytes().size(), pool ? pool->bytes() : 0, "the input"); !c) return c;
        if (!m.header.get_text().empty()) ctx.nodes[0] = m.header.get_text();
        if (!pool) {
            pool = std::make_shared<BufferPool>(info.frame_bytes());
            ctx.first_frame();
        }
        auto* out = pool->take();
        task.process(m.bytes(), *out, info);
        Header res{.kind = Kind::result, .index = m.header.index};
        res.worker = ctx.worker;
        res.set_text(o.node);
        if (auto s = results.send(res, {}, false, out, pool); !s) return aborted_meanwhile(work, s.error(), aborted);
        if (auto s = work.send(ready); !s) return s;
    }
    return {};
}

Result<void> run_output(Context& ctx, void* zc, bool& told_input) {
    const Options& o = ctx.options;
    const Endpoints ep = endpoints_of(o);
    ZmqSocket results(ctx, zc, ZMQ_PULL, "output PULL " + ep.results);
    data_socket(results, o);
    ZmqSocket control(ctx, zc, ZMQ_PUSH, "output PUSH to the input " + ep.control);
    if (auto r = results.bind(ep.results); !r) return r;
    if (auto r = control.connect(ep.control); !r) return r;
    auto fail = [&](const Error& e) -> Result<void> {
        Header a{.kind = Kind::abort};
        a.set_text(fmt::format("rank {} (output, node {}): {}", ctx.rank, o.node, e.message));
        (void)control.send(a, {}, false, nullptr, {}, true);
        told_input = true;
        return std::unexpected(e);
    };
    auto output = OutputTask::create(ctx);
    if (!output) return fail(output.error());
    auto describe = [&] { return output->started() ? output->missing() : std::string(); };
    // PULL queues fairly from every PUSH: a result can overtake the input's
    // stream information, so early results wait (at most --hwm per worker).
    std::deque<std::unique_ptr<ZmqMessage>> early;
    auto take = [&](ZmqMessage& m) -> Result<void> {
        switch (m.header.kind) {
            case Kind::info:
                if (auto s = output->start(
                        {m.header.width, m.header.height, m.header.rate_num, m.header.rate_den, m.header.count});
                    !s) {
                    return s;
                }
                break;
            case Kind::end: return output->set_total(m.header.count);
            case Kind::result:
                if (!m.has_frame) return make_error(Errc::corrupted, "result {} without its frame", m.header.index);
                return output->accept_view(m.header.index, m.bytes());
            default: return make_error(Errc::corrupted, "unexpected {} message", to_string(m.header.kind));
        }
        return {};
    };
    while (!output->done()) {
        auto which = wait_any(ctx, {&results}, "results from the workers", describe);
        if (!which) return fail(which.error());
        auto m = std::make_unique<ZmqMessage>();
        if (auto r = results.receive(*m, false, false); !r) return fail(r.error());
        if (m->header.kind == Kind::abort) {
            told_input = true;
            return make_error(Errc::peer_dead, "the job was aborted by {}", m->header.get_text());
        }
        if (!output->started() && m->header.kind != Kind::info) {
            early.push_back(std::move(m));
            continue;
        }
        if (auto t = take(*m); !t) return fail(t.error());
        for (; !early.empty(); early.pop_front()) {
            if (auto t = take(*early.front()); !t) return fail(t.error());
        }
    }
    if (auto f = output->finish(); !f) return fail(f.error());
    if (auto s = control.send(Header{.kind = Kind::complete, .count = output->written()}); !s) return s;
    return {};
}

int env_int(const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr ? std::atoi(v) : -1;
}

}  // namespace

int run_zmq(const Options& options) {
    Context ctx(options);
    ctx.rank = options.rank >= 0 ? options.rank : env_int("PMI_RANK");
    ctx.size = options.size >= 0 ? options.size : env_int("PMI_SIZE");
    if (ctx.rank < 0 || ctx.size < 0) {
        std::fprintf(stderr,
                     "strata-video: --rank: missing for --impl=%s (run it under mpiexec, which sets PMI_RANK and "
                     "PMI_SIZE, or pass --rank and --size)\n",
                     options.impl_name.c_str());
        return 2;
    }
    if (ctx.size < 3) {
        if (ctx.rank == 0) {
            ctx.error(fmt::format("--impl={}: {} rank{}: the pipeline needs at least 3 (input, output, a worker)",
                                  options.impl_name, ctx.size, ctx.size == 1 ? "" : "s"));
        }
        return 2;
    }
    ctx.role = ctx.rank == input_rank ? Role::input : ctx.rank == output_rank ? Role::output : Role::worker;
    ctx.worker = ctx.role == Role::worker ? ctx.rank - first_worker_rank : -1;
    // Peers' nodes arrive with their messages (ready, job, result headers carry them).
    ctx.nodes.assign(static_cast<std::size_t>(ctx.size), std::string());
    if (ctx.rank < ctx.size) ctx.nodes[static_cast<std::size_t>(ctx.rank)] = options.node;
    ctx.started();
    if (options.rank < 0) exit_on_hydra_notice(ctx);  // launched by mpiexec
    const bool credit_mode = options.impl == Impl::zmq_credit;
    bool told = false;
    Result<void> r;
    {
        ZmqContext zc;
        switch (ctx.role) {
            case Role::input: r = run_input(ctx, zc.raw, credit_mode, told); break;
            case Role::output: r = run_output(ctx, zc.raw, told); break;
            default: r = run_worker(ctx, zc.raw, credit_mode, told); break;
        }
        ctx.stats.total_s = ctx.elapsed();
    }
    if (!r) {
        ctx.error(r.error().what());
        ctx.exit_now(1);
    }
    if (auto s = ctx.write_stats(); !s) ctx.error(s.error().what());
    ctx.exit_now(0);
}

}  // namespace strata::video
