// SPDX-License-Identifier: MIT
// The paper's three MPI implementations (pipeline.hpp): rank 0 input, rank 1
// output, ranks 2.. workers. Per frame: the worker says "ready", the input
// sends a job header and the frame, the worker sends a result header and the
// filtered frame to the output (5 messages, the paper's protocol).
//
//   mpi-sync         the input waits for each send to complete before decoding the next frame
//   mpi-async        one send buffer; the next frame is decoded while the previous one is sent
//   mpi-async-multi  one send buffer per worker slot, --credits frames in flight per worker
//
// At the end the input tells the output the frame count; the output confirms
// when every frame is written; only then are the workers stopped, so that no
// rank reaches MPI_Finalize while a peer may still need it.
#include <deque>
#include <optional>

#include <fmt/format.h>

#include "hydra_notice.hpp"
#include "mpi_link.hpp"
#include "pipeline.hpp"
#include "roles.hpp"

namespace strata::video {

namespace {

struct Variant {
    bool sync = false;
    bool buffer_per_slot = false;
    int slots = 1;  ///< frames in flight per worker
};

Variant variant_of(const Options& o) {
    switch (o.impl) {
        case Impl::mpi_sync: return {.sync = true, .buffer_per_slot = false, .slots = 1};
        case Impl::mpi_async: return {.sync = false, .buffer_per_slot = false, .slots = 1};
        default: return {.sync = false, .buffer_per_slot = true, .slots = o.credits};
    }
}

struct WorkerView {
    std::int64_t jobs = 0;
    std::int64_t readies = 0;
    double last_heard = 0;
    bool fin = false;
};

Result<void> run_input(Context& ctx, MpiLink& link, const Variant& v) {
    auto input = InputTask::open(ctx);
    if (!input) return std::unexpected(input.error());
    const StreamInfo info = input->info();
    const int workers = ctx.size - first_worker_rank;
    Header hi{.kind = Kind::info};
    hi.width = info.width;
    hi.height = info.height;
    hi.rate_num = info.rate_num;
    hi.rate_den = info.rate_den;
    hi.count = info.frames;  // expected, for the output's progress line (Kind::end has the exact count)
    if (auto s = link.send_header(hi, output_rank); !s) return std::unexpected(s.error());

    const int buffers = v.buffer_per_slot ? workers * v.slots : 1;
    auto& frame = link.keep<std::vector<Frame>>();  // sends of these may be pending when a wait fails
    frame.assign(static_cast<std::size_t>(buffers), Frame(info.frame_bytes()));
    std::vector<MPI_Request> frame_send(static_cast<std::size_t>(buffers), MPI_REQUEST_NULL);
    std::vector<WorkerView> view(static_cast<std::size_t>(workers));
    Holders holders(workers);
    std::deque<int> credits;  // a worker index per "ready" not yet used: eager scheduling, first come first served
    bool complete = false;
    int fins = 0;
    const double t0 = now_s();
    for (auto& w : view) w.last_heard = t0;
    link.describe_wait = [&] {
        std::string s;
        for (int w = 0; w < workers; ++w) {
            const auto& x = view[static_cast<std::size_t>(w)];
            s += fmt::format("{}worker {} ({}): {} frames sent, last heard {:.1f} s ago{}", w == 0 ? "" : "; ", w,
                             ctx.peer(w + first_worker_rank), x.jobs, now_s() - x.last_heard, x.fin ? ", stopped" : "");
        }
        return s;
    };
    auto take = [&](const Header& h) -> Result<void> {
        const int w = h.from - first_worker_rank;
        if (h.kind == Kind::complete && h.from == output_rank) {
            complete = true;
            return {};
        }
        if (w < 0 || w >= workers || (h.kind != Kind::ready && h.kind != Kind::fin)) {
            return make_error(Errc::corrupted, "unexpected {} message from rank {}", to_string(h.kind), h.from);
        }
        auto& x = view[static_cast<std::size_t>(w)];
        x.last_heard = now_s();
        holders.heard(w);
        if (h.kind == Kind::ready) {
            ++x.readies;
            credits.push_back(w);
        } else {
            x.fin = true;
            ++fins;
            if (h.count != x.readies) {
                return make_error(Errc::corrupted, "worker {} sent {} ready messages, {} arrived", w, h.count,
                                  x.readies);
            }
        }
        return {};
    };
    std::vector<int> next_slot(static_cast<std::size_t>(workers), 0);
    for (;;) {
        auto got = input->decode();
        if (!got) return std::unexpected(got.error());
        if (!*got) break;
        const std::int64_t index = input->decoded() - 1;
        while (credits.empty()) {
            auto h = link.next_header(MPI_ANY_SOURCE, fmt::format("a worker to ask for frame {}", index));
            if (!h) return std::unexpected(h.error());
            if (auto t = take(*h); !t) return t;
        }
        if (auto c = holders.check(ctx, first_worker_rank); !c) return c;
        const int w = credits.front();
        credits.pop_front();
        const int dest = w + first_worker_rank;
        auto& slot = next_slot[static_cast<std::size_t>(w)];
        const auto b = static_cast<std::size_t>(v.buffer_per_slot ? w * v.slots + slot : 0);
        slot = (slot + 1) % v.slots;
        if (auto r = link.wait(frame_send[b], fmt::format("the send buffer to be free ({})", ctx.peer(dest))); !r)
            return r;
        if (auto c = input->convert(frame[b]); !c) return c;
        Header job{.kind = Kind::job, .index = index};
        job.worker = w;
        job.width = info.width;
        job.height = info.height;
        auto hr = link.send_header(job, dest);
        if (!hr) return std::unexpected(hr.error());
        auto fr = link.send_bytes(frame[b].data(), frame[b].size(), dest, tag_frame);
        if (!fr) return std::unexpected(fr.error());
        frame_send[b] = *fr;
        ++view[static_cast<std::size_t>(w)].jobs;
        holders.sent(w);
        if (v.sync) {
            MPI_Request header_request = *hr;
            if (auto r = link.wait(header_request, fmt::format("job {} to reach {}", index, ctx.peer(dest))); !r)
                return r;
            if (auto r = link.wait(frame_send[b], fmt::format("frame {} to reach {}", index, ctx.peer(dest))); !r)
                return r;
        }
    }
    Header end{.kind = Kind::end, .count = input->decoded()};
    if (auto s = link.send_header(end, output_rank); !s) return std::unexpected(s.error());
    while (!complete) {
        auto h = link.next_header(MPI_ANY_SOURCE,
                                  fmt::format("the output ({}) to confirm every frame", ctx.peer(output_rank)));
        if (!h) return std::unexpected(h.error());
        if (auto t = take(*h); !t) return t;
        if (auto c = holders.check(ctx, first_worker_rank); !c) return c;
    }
    for (int w = 0; w < workers; ++w) {
        if (auto s = link.send_header(Header{.kind = Kind::stop}, w + first_worker_rank); !s) {
            return std::unexpected(s.error());
        }
    }
    while (fins < workers) {
        auto h = link.next_header(MPI_ANY_SOURCE, "every worker to stop");
        if (!h) return std::unexpected(h.error());
        if (auto t = take(*h); !t) return t;
    }
    if (auto r = link.wait_all(frame_send, "the last frames to be sent"); !r) return r;
    return link.flush();
}

Result<void> run_worker(Context& ctx, MpiLink& link, const Variant& v) {
    WorkerTask task(ctx);
    std::int64_t readies = 0;
    auto ready = [&]() -> Result<void> {
        Header h{.kind = Kind::ready};
        h.worker = ctx.worker;
        auto r = link.send_header(h, input_rank);
        if (!r) return std::unexpected(r.error());
        ++readies;
        if (v.sync) {
            MPI_Request q = *r;
            return link.wait(q, fmt::format("the ready message to reach the input ({})", ctx.peer(input_rank)));
        }
        return {};
    };
    for (int i = 0; i < v.slots; ++i) {
        if (auto r = ready(); !r) return r;
    }
    // Kept by the link: a failed wait can leave the receive into `in` or a send of `out` pending.
    struct Buffers {
        Frame in;
        Frame out[2];
    };
    auto& buffers = link.keep<Buffers>();
    Frame& in = buffers.in;
    auto& out = buffers.out;
    MPI_Request out_send[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    int turn = 0;
    StreamInfo info;
    for (;;) {
        auto h = link.next_header(input_rank, fmt::format("a job from the input ({})", ctx.peer(input_rank)), 2);
        if (!h) return std::unexpected(h.error());
        if (h->kind == Kind::stop) break;
        if (h->kind != Kind::job || h->width <= 0 || h->height <= 0) {
            return make_error(Errc::corrupted, "unexpected {} message from rank {}", to_string(h->kind), h->from);
        }
        if (in.empty()) {
            info.width = h->width;
            info.height = h->height;
            in.resize(info.frame_bytes());
            out[0].resize(info.frame_bytes());
            out[1].resize(info.frame_bytes());
            ctx.first_frame();
        }
        auto rr = link.recv_bytes(in.data(), in.size(), input_rank, tag_frame);
        if (!rr) return std::unexpected(rr.error());
        if (auto r = link.wait(*rr, fmt::format("frame {} from the input ({})", h->index, ctx.peer(input_rank))); !r)
            return r;
        ctx.stats.messages_received += 1;
        ctx.stats.bytes_received += in.size();
        if (auto r = link.wait(out_send[turn],
                               fmt::format("the previous result to reach the output ({})", ctx.peer(output_rank)));
            !r)
            return r;
        task.process(in, out[turn], info);
        Header res{.kind = Kind::result, .index = h->index};
        res.worker = ctx.worker;
        auto hr = link.send_header(res, output_rank);
        if (!hr) return std::unexpected(hr.error());
        auto fr = link.send_bytes(out[turn].data(), out[turn].size(), output_rank, tag_result);
        if (!fr) return std::unexpected(fr.error());
        out_send[turn] = *fr;
        if (v.sync) {
            MPI_Request q = *hr;
            if (auto r = link.wait(q, fmt::format("the result header to reach the output ({})", ctx.peer(output_rank)));
                !r)
                return r;
            if (auto r = link.wait(out_send[turn],
                                   fmt::format("result {} to reach the output ({})", h->index, ctx.peer(output_rank)));
                !r) {
                return r;
            }
        }
        turn = 1 - turn;
        if (auto r = ready(); !r) return r;
    }
    Header fin{.kind = Kind::fin, .count = readies};
    fin.worker = ctx.worker;
    if (auto s = link.send_header(fin, input_rank); !s) return std::unexpected(s.error());
    for (auto& q : out_send) {
        if (auto r = link.wait(q, fmt::format("the last result to reach the output ({})", ctx.peer(output_rank))); !r)
            return r;
    }
    return link.flush();
}

Result<void> run_output(Context& ctx, MpiLink& link) {
    auto output = OutputTask::create(ctx);
    if (!output) return std::unexpected(output.error());
    link.describe_wait = [&] { return output->started() ? output->missing() : std::string(); };
    auto h =
        link.next_header(input_rank, fmt::format("the stream information from the input ({})", ctx.peer(input_rank)));
    if (!h) return std::unexpected(h.error());
    if (h->kind != Kind::info) {
        return make_error(Errc::corrupted, "expected the stream information, got {} from rank {}", to_string(h->kind),
                          h->from);
    }
    if (auto s = output->start({h->width, h->height, h->rate_num, h->rate_den, h->count}); !s) return s;
    while (!output->done()) {
        auto m = link.next_header(MPI_ANY_SOURCE, "results from the workers");
        if (!m) return std::unexpected(m.error());
        if (m->kind == Kind::end && m->from == input_rank) {
            if (auto t = output->set_total(m->count); !t) return t;
            continue;
        }
        if (m->kind != Kind::result || m->from < first_worker_rank) {
            return make_error(Errc::corrupted, "unexpected {} message from rank {}", to_string(m->kind), m->from);
        }
        Frame frame = output->take_buffer();
        auto rr = link.recv_bytes(frame.data(), frame.size(), m->from, tag_result);
        if (!rr) return std::unexpected(rr.error());
        if (auto r = link.wait(*rr, fmt::format("result {} from {}", m->index, ctx.peer(m->from))); !r) {
            link.keep<Frame>() = std::move(frame);  // the receive may still be pending
            return r;
        }
        ctx.stats.messages_received += 1;
        ctx.stats.bytes_received += frame.size();
        if (auto a = output->accept(m->index, std::move(frame)); !a) return a;
    }
    if (auto f = output->finish(); !f) return f;
    if (auto s = link.send_header(Header{.kind = Kind::complete, .count = output->written()}, input_rank); !s) {
        return std::unexpected(s.error());
    }
    return link.flush();
}

}  // namespace

int run_mpi(const Options& options) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    Context ctx(options);
    MPI_Comm_rank(MPI_COMM_WORLD, &ctx.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ctx.size);
    if (ctx.size < 3) {
        if (ctx.rank == 0) {
            ctx.error(fmt::format("--impl={}: {} rank{}: the pipeline needs at least 3 (input, output, a worker)",
                                  options.impl_name, ctx.size, ctx.size == 1 ? "" : "s"));
        }
        MPI_Finalize();
        return 2;
    }
    ctx.role = ctx.rank == input_rank ? Role::input : ctx.rank == output_rank ? Role::output : Role::worker;
    ctx.worker = ctx.role == Role::worker ? ctx.rank - first_worker_rank : -1;
    ctx.started();
    exit_on_hydra_notice(ctx);
    const bool across_nodes = spans_nodes(ctx);
    learn_nodes(ctx);
    const Variant v = variant_of(options);
    Result<void> r;
    std::optional<MpiLink> link;
    link.emplace(ctx);
    // Everyone is up: the times start together.
    MPI_Request barrier = MPI_REQUEST_NULL;
    MPI_Ibarrier(link->comm(), &barrier);
    r = link->wait(barrier, "every rank to start");
    ctx.start = std::chrono::steady_clock::now();
    if (r) switch (ctx.role) {
            case Role::input: r = run_input(ctx, *link, v); break;
            case Role::output: r = run_output(ctx, *link); break;
            default: r = run_worker(ctx, *link, v); break;
        }
    ctx.stats.total_s = ctx.elapsed();
    if (!r) {
        ctx.error(r.error().what());
        if (!link->aborted_by_peer()) link->abort_all(r.error().message);
        link->leave_together();
        ctx.exit_now(1);  // without MPI_Finalize, which would wait for the failed peer
    }
    if (auto s = ctx.write_stats(); !s) ctx.error(s.error().what());
    finish_rank(ctx, link->comm(), across_nodes);
}

}  // namespace strata::video
