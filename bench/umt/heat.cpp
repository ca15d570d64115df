// SPDX-License-Identifier: MIT
// UMT heat diffusion (after the paper's Gauss-Seidel benchmark): a square
// grid in --blocks x --blocks blocks, --iters Gauss-Seidel iterations as a
// blocked wavefront, one task per block and iteration. Task (k, i, j) waits
// for the blocks above and to the left at iteration k and for itself, the
// block below and the one to the right at iteration k-1, which is exactly what
// an in-place Gauss-Seidel sweep reads and overwrites. Every --ckpt-every
// iterations each task also writes its block to a checkpoint file (O_DIRECT
// with --direct=1), after updating it, as in the paper; --latency-us=N makes
// each checkpoint write also wait N µs for a latency-bound device
// (umt::device_wait), for runs with the paper's blocking share.
//
//   strata-umt-heat --blocks=8 --block-size=256 --iters=16 --sweeps=8 --ckpt-every=2 --direct=1
//
// Distributed (`strata ocr -n N strata-umt-heat ...`, umt_net.hpp): rank r
// computes block rows [B*r/N, B*(r+1)/N) and checkpoints them to a file of
// its own. The rows at a boundary between ranks travel with blocking MPI
// calls in tasks of their own: after block (k, i, j) at the bottom of a rank,
// its last row goes down (the next rank's block (k, i+1, j) reads it); after
// the top block of the next rank, its first row goes up (read by (k+1, i, j)).
// The transfers at one boundary form one chain in the same order on both
// ranks — per iteration and block column: receive, then send — the
// sequential ordering of communication tasks the paper's programs enforce;
// they start before ready compute tasks (a priority hint).
// --dump=PATH writes the final grid (every rank its rows).
#include <tuple>
#include <vector>

#include "umt_common.hpp"
#include "umt_net.hpp"

namespace {

struct Config {
    std::uint64_t blocks, bs, n, iters, sweeps, ckpt_every;
    bool direct;
    std::uint64_t latency_us = 0;
    umt::net::Wait net_wait = umt::net::Wait::kernel;
    std::uint64_t rank = 0, ranks = 1, ilo = 0, ihi = 0;  // this rank's block rows: [ilo, ihi)
    std::string dump;
    int fd = -1;
};
// The parameters mainEdt passes to every rank's EDT, then two paths and the rank.
enum Param : std::size_t { P_BLOCKS, P_BS, P_ITERS, P_SWEEPS, P_CKPT, P_DIRECT, P_LATENCY, P_WAIT, P_FILE };
constexpr std::size_t P_DUMP = P_FILE + umt::net::path_words;
constexpr std::size_t P_RANK = P_DUMP + umt::net::path_words;
// The two boundaries of a rank, and the two transfers per iteration and block column at each.
enum Side : std::uint64_t { top = 0, bottom = 1 };
enum Kind : std::uint64_t { receive = 0, send = 1 };
constexpr int tag_down = 2, tag_up = 3;

Config g;
double* g_grid = nullptr;
std::vector<ocrGuid_t> g_done;         // STICKY per (k, own i, j)
std::vector<ocrGuid_t> g_transfer[2];  // STICKY per (k, j, kind) at the top / bottom boundary

ocrGuid_t& done(std::uint64_t k, std::uint64_t i, std::uint64_t j) {
    return g_done[(k * (g.ihi - g.ilo) + (i - g.ilo)) * g.blocks + j];
}
ocrGuid_t& transfer(Side side, std::uint64_t k, std::uint64_t j, Kind kind) {
    return g_transfer[side][(k * g.blocks + j) * 2 + kind];
}

// --sweeps in-place Gauss-Seidel passes over the block; the grid's outer
// border is a fixed boundary condition.
void relax(std::uint64_t bi, std::uint64_t bj) {
    const std::uint64_t n = g.n;
    const std::uint64_t r0 = std::max<std::uint64_t>(1, bi * g.bs), r1 = std::min(n - 1, (bi + 1) * g.bs);
    const std::uint64_t c0 = std::max<std::uint64_t>(1, bj * g.bs), c1 = std::min(n - 1, (bj + 1) * g.bs);
    for (std::uint64_t sweep = 0; sweep < g.sweeps; ++sweep) {
        for (std::uint64_t r = r0; r < r1; ++r) {
            double* row = g_grid + r * n;
            const double* up = row - n;
            const double* down = row + n;
            for (std::uint64_t c = c0; c < c1; ++c) row[c] = 0.25 * (up[c] + down[c] + row[c - 1] + row[c + 1]);
        }
    }
}

// paramv: k, i, j.
ocrGuid_t blockEdt(u32, u64* paramv, u32, ocrEdtDep_t*) {
    const std::uint64_t k = paramv[0], i = paramv[1], j = paramv[2];
    {
        const umt::TaskBodyCpu body;
        {
            const umt::TaskCpu cpu;
            relax(i, j);
        }
        if (g.ckpt_every != 0 && (k + 1) % g.ckpt_every == 0) {
            const std::size_t row_bytes = g.bs * sizeof(double);
            // One buffer per worker thread, as the synthetic tasks keep theirs: a fresh one per
            // checkpoint made every write fault in and zero new pages, more of them the more
            // worker threads (and malloc arenas) a mode runs.
            thread_local umt::AlignedBuffer buffer(g.bs * row_bytes);
            for (std::uint64_t r = 0; r < g.bs; ++r)
                std::memcpy(buffer.data() + r * row_bytes, g_grid + (i * g.bs + r) * g.n + j * g.bs, row_bytes);
            umt::full_pwrite(g.fd, buffer.data(), buffer.size(), ((i - g.ilo) * g.blocks + j) * buffer.size());
            if (g.latency_us != 0) umt::device_wait(g.latency_us);
        }
    }
    ocrEventSatisfy(done(k, i, j), NULL_GUID);
    return NULL_GUID;
}

// paramv: side, k, j, kind. At the top boundary (this rank below the other):
// receive the row above block (k, ilo, j) of iteration k, then send the block's
// first row once it is done (none after the last iteration). At the bottom:
// receive the row below block (k, ihi-1, j) of iteration k-1 (none at k = 0),
// then send the block's last row once it is done.
ocrGuid_t transferEdt(u32, u64* paramv, u32, ocrEdtDep_t*) {
    const auto side = static_cast<Side>(paramv[0]);
    const std::uint64_t k = paramv[1], j = paramv[2];
    const auto kind = static_cast<Kind>(paramv[3]);
    const std::size_t bytes = g.bs * sizeof(double);
    const std::uint64_t peer = side == top ? g.rank - 1 : g.rank + 1;
    if (side == top && kind == receive) {
        umt::net::receive(peer, g_grid + (g.ilo * g.bs - 1) * g.n + j * g.bs, bytes, tag_down, g.net_wait);
    } else if (side == top && k + 1 < g.iters) {
        umt::net::send(peer, g_grid + g.ilo * g.bs * g.n + j * g.bs, bytes, tag_up, g.net_wait);
    } else if (side == bottom && kind == receive && k > 0) {
        umt::net::receive(peer, g_grid + g.ihi * g.bs * g.n + j * g.bs, bytes, tag_up, g.net_wait);
    } else if (side == bottom && kind == send) {
        umt::net::send(peer, g_grid + (g.ihi * g.bs - 1) * g.n + j * g.bs, bytes, tag_down, g.net_wait);
    }
    ocrEventSatisfy(transfer(side, k, j, kind), NULL_GUID);
    return NULL_GUID;
}

// One boundary's transfers, each after the one before it; a send also after its block.
void create_transfers(ocrGuid_t transfer_template, Side side) {
    const std::uint64_t edge = side == top ? g.ilo : g.ihi - 1;
    ocrGuid_t previous = NULL_GUID;
    for (std::uint64_t k = 0; k < g.iters; ++k) {
        for (std::uint64_t j = 0; j < g.blocks; ++j) {
            for (const Kind kind : {receive, send}) {
                std::vector<ocrGuid_t> deps;
                if (!ocrGuidIsNull(previous)) deps.push_back(previous);
                if (kind == send) deps.push_back(done(k, edge, j));
                u64 params[4] = {side, k, j, kind};
                ocrGuid_t edt;
                ocrHint_t hint;
                ocrEdtCreate(&edt, transfer_template, 4, params, static_cast<u32>(deps.size()),
                             deps.empty() ? nullptr : deps.data(), EDT_PROP_NONE, umt::net::communication_hint(&hint),
                             nullptr);
                previous = transfer(side, k, j, kind);
            }
        }
    }
}

// Task (k, i, j) after (k, i-1, j), (k, i, j-1), (k-1, i, j), (k-1, i+1, j),
// (k-1, i, j+1); a neighbour on another rank through the transfer bringing its row.
ocrGuid_t rootEdt(u32, u64*, u32, ocrEdtDep_t*) {
    ocrGuid_t block_template, transfer_template;
    ocrEdtTemplateCreate(&block_template, blockEdt, 3, EDT_PARAM_UNK);
    ocrEdtTemplateCreate(&transfer_template, transferEdt, 4, EDT_PARAM_UNK);
    const bool has_top = g.ilo > 0, has_bottom = g.ihi < g.blocks;
    for (std::uint64_t k = 0; k < g.iters; ++k) {
        for (std::uint64_t i = g.ilo; i < g.ihi; ++i) {
            for (std::uint64_t j = 0; j < g.blocks; ++j) {
                std::vector<ocrGuid_t> deps;
                if (i > g.ilo) deps.push_back(done(k, i - 1, j));
                if (i == g.ilo && has_top) deps.push_back(transfer(top, k, j, receive));
                if (j > 0) deps.push_back(done(k, i, j - 1));
                if (k > 0) {
                    deps.push_back(done(k - 1, i, j));
                    if (i + 1 < g.ihi) deps.push_back(done(k - 1, i + 1, j));
                    if (i + 1 == g.ihi && has_bottom) deps.push_back(transfer(bottom, k, j, receive));
                    if (j + 1 < g.blocks) deps.push_back(done(k - 1, i, j + 1));
                }
                u64 params[3] = {k, i, j};
                ocrGuid_t edt;
                ocrEdtCreate(&edt, block_template, 3, params, static_cast<u32>(deps.size()),
                             deps.empty() ? nullptr : deps.data(), EDT_PROP_NONE, NULL_HINT, nullptr);
            }
        }
    }
    if (has_top) create_transfers(transfer_template, top);
    if (has_bottom) create_transfers(transfer_template, bottom);
    return NULL_GUID;
}

// --dump: this rank's rows of the final grid, at their place in the file.
void dump_grid() {
    if (g.dump.empty()) return;
    const int fd = ::open(g.dump.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        std::fprintf(stderr, "umt: --dump=%s: %s\n", g.dump.c_str(), std::strerror(errno));
        std::exit(1);
    }
    const std::size_t bytes = (g.ihi - g.ilo) * g.bs * g.n * sizeof(double);
    const std::size_t offset = g.ilo * g.bs * g.n;
    umt::full_pwrite(fd, g_grid + offset, bytes, offset * sizeof(double));
    ::close(fd);
}

ocrGuid_t reportEdt(u32, u64*, u32, ocrEdtDep_t*) {
    double sum = 0;
    for (std::uint64_t x = g.ilo * g.bs * g.n; x < g.ihi * g.bs * g.n; ++x) sum += g_grid[x];
    dump_grid();
    const std::uint64_t checkpoints = g.ckpt_every == 0 ? 0 : g.iters / g.ckpt_every;
    char sum_text[64];
    std::snprintf(sum_text, sizeof sum_text, "%.17g", sum);
    umt::report("heat",
                "\"grid_blocks\":" + std::to_string(g.blocks) + ",\"block_size\":" + std::to_string(g.bs) +
                    ",\"iters\":" + std::to_string(g.iters) + ",\"sweeps\":" + std::to_string(g.sweeps) +
                    ",\"ckpt_every\":" + std::to_string(g.ckpt_every) + ",\"direct\":" + (g.direct ? "true" : "false") +
                    ",\"latency_us\":" + std::to_string(g.latency_us) +
                    ",\"io_bytes\":" + std::to_string(checkpoints * (g.ihi - g.ilo) * g.bs * g.n * sizeof(double)) +
                    "," + umt::net::report_fields(g.rank, g.ranks, g.net_wait) + ",\"checksum\":\"" + sum_text + "\"");
    for (const auto event : g_done) ocrEventDestroy(event);
    for (const auto& side : g_transfer)
        for (const auto event : side) ocrEventDestroy(event);
    return NULL_GUID;  // mainEdt's last EDT shuts down once every rank reported
}

// One per rank (a FINISH EDT, umt::net::start_ranks): this rank's grid, file
// and tasks, then its report.
ocrGuid_t rankEdt(u32, u64* paramv, u32, ocrEdtDep_t*) {
    g.blocks = paramv[P_BLOCKS];
    g.bs = paramv[P_BS];
    g.n = g.blocks * g.bs;
    g.iters = paramv[P_ITERS];
    g.sweeps = paramv[P_SWEEPS];
    g.ckpt_every = paramv[P_CKPT];  // 0: no checkpoints (compute alone)
    g.direct = paramv[P_DIRECT] != 0;
    g.latency_us = paramv[P_LATENCY];
    g.net_wait = static_cast<umt::net::Wait>(paramv[P_WAIT]);
    g.dump = umt::net::unpack_path(paramv + P_DUMP);
    g.rank = paramv[P_RANK];
    g.ranks = umt::net::rank_count();
    umt::net::check_rank(g.rank);
    std::tie(g.ilo, g.ihi) = umt::net::share(g.blocks, g.rank, g.ranks);
    const std::string file = umt::net::rank_file(umt::net::unpack_path(paramv + P_FILE), g.rank, g.ranks);
    g.fd = umt::open_data_file(file, (g.ihi - g.ilo) * g.bs * g.n * sizeof(double), g.direct);
    // The whole grid, though the rank computes only its rows: the rows next
    // to them are the halos, written by the transfers.
    g_grid = static_cast<double*>(std::aligned_alloc(4096, g.n * g.n * sizeof(double)));
    for (std::uint64_t r = 0; r < g.n; ++r)
        for (std::uint64_t c = 0; c < g.n; ++c) g_grid[r * g.n + c] = (r == 0 || c == 0) ? 100.0 : 0.0;
    g_done.resize(g.iters * (g.ihi - g.ilo) * g.blocks);
    for (auto& event : g_done) ocrEventCreate(&event, OCR_EVENT_STICKY_T, EVT_PROP_NONE);
    for (auto& side : g_transfer) {
        side.resize(g.iters * g.blocks * 2);
        for (auto& event : side) ocrEventCreate(&event, OCR_EVENT_STICKY_T, EVT_PROP_NONE);
    }

    umt::start_measuring();
    ocrGuid_t root_template, report_template, start, root, finished, report;
    ocrEdtTemplateCreate(&root_template, rootEdt, 0, 1);
    ocrEdtTemplateCreate(&report_template, reportEdt, 0, 1);
    ocrEventCreate(&start, OCR_EVENT_ONCE_T, EVT_PROP_NONE);
    ocrEdtCreate(&root, root_template, 0, nullptr, 1, &start, EDT_PROP_FINISH, NULL_HINT, &finished);
    ocrEdtCreate(&report, report_template, 0, nullptr, 1, &finished, EDT_PROP_NONE, NULL_HINT, nullptr);
    ocrEventSatisfy(start, NULL_GUID);
    return NULL_GUID;
}

}  // namespace

extern "C" ocrGuid_t mainEdt(u32, u64*, u32, ocrEdtDep_t depv[]) {
    const umt::Args args(depv[0].ptr, {{"blocks", "8"},
                                       {"block-size", "256"},
                                       {"iters", "16"},
                                       {"sweeps", "8"},
                                       {"ckpt-every", "2"},
                                       {"direct", "1"},
                                       {"latency-us", "0"},
                                       {"net-wait", "kernel"},
                                       {"dump", ""},
                                       {"file", "/var/tmp/strata-umt-heat.dat"}});
    std::vector<u64> params(P_RANK);
    params[P_BLOCKS] = args.count("blocks");
    params[P_BS] = args.count("block-size");
    params[P_ITERS] = args.count("iters");
    params[P_SWEEPS] = std::max<std::uint64_t>(1, args.count("sweeps"));
    params[P_CKPT] = args.count("ckpt-every");
    params[P_DIRECT] = args.count("direct");
    params[P_LATENCY] = args.count("latency-us");
    params[P_WAIT] = static_cast<u64>(umt::net::parse_wait(args.str("net-wait")));
    if ((params[P_BS] * params[P_BS] * sizeof(double)) % 4096 != 0) {
        std::fprintf(stderr, "umt: --block-size=%llu: a block must be a multiple of 4 KiB for O_DIRECT\n",
                     static_cast<unsigned long long>(params[P_BS]));
        std::exit(2);
    }
    if (params[P_BLOCKS] < umt::net::rank_count()) {
        std::fprintf(stderr, "umt: --blocks=%llu: fewer block rows than the %llu ranks\n",
                     static_cast<unsigned long long>(params[P_BLOCKS]),
                     static_cast<unsigned long long>(umt::net::rank_count()));
        std::exit(2);
    }
    umt::net::pack_path(args.str("file"), params.data() + P_FILE);
    umt::net::pack_path(args.str("dump"), params.data() + P_DUMP);
    umt::net::start_ranks(rankEdt, params);
    return NULL_GUID;
}
