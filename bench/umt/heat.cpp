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
#include <vector>

#include "umt_common.hpp"

namespace {

struct Config {
    std::uint64_t blocks, bs, n, iters, sweeps, ckpt_every;
    bool direct;
    std::uint64_t latency_us = 0;
    int fd = -1;
};
Config g;
double* g_grid = nullptr;
std::vector<ocrGuid_t> g_done;  // STICKY per (k, i, j)

ocrGuid_t& done(std::uint64_t k, std::uint64_t i, std::uint64_t j) {
    return g_done[(k * g.blocks + i) * g.blocks + j];
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
            umt::full_pwrite(g.fd, buffer.data(), buffer.size(), (i * g.blocks + j) * buffer.size());
            if (g.latency_us != 0) umt::device_wait(g.latency_us);
        }
    }
    ocrEventSatisfy(done(k, i, j), NULL_GUID);
    return NULL_GUID;
}

ocrGuid_t rootEdt(u32, u64*, u32, ocrEdtDep_t*) {
    ocrGuid_t block_template;
    ocrEdtTemplateCreate(&block_template, blockEdt, 3, EDT_PARAM_UNK);
    for (std::uint64_t k = 0; k < g.iters; ++k) {
        for (std::uint64_t i = 0; i < g.blocks; ++i) {
            for (std::uint64_t j = 0; j < g.blocks; ++j) {
                std::vector<ocrGuid_t> deps;
                if (i > 0) deps.push_back(done(k, i - 1, j));
                if (j > 0) deps.push_back(done(k, i, j - 1));
                if (k > 0) {
                    deps.push_back(done(k - 1, i, j));
                    if (i + 1 < g.blocks) deps.push_back(done(k - 1, i + 1, j));
                    if (j + 1 < g.blocks) deps.push_back(done(k - 1, i, j + 1));
                }
                u64 params[3] = {k, i, j};
                ocrGuid_t edt;
                ocrEdtCreate(&edt, block_template, 3, params, static_cast<u32>(deps.size()),
                             deps.empty() ? nullptr : deps.data(), EDT_PROP_NONE, NULL_HINT, nullptr);
            }
        }
    }
    return NULL_GUID;
}

ocrGuid_t reportEdt(u32, u64*, u32, ocrEdtDep_t*) {
    double sum = 0;
    for (std::uint64_t x = 0; x < g.n * g.n; ++x) sum += g_grid[x];
    const std::uint64_t checkpoints = g.ckpt_every == 0 ? 0 : g.iters / g.ckpt_every;
    char sum_text[64];
    std::snprintf(sum_text, sizeof sum_text, "%.17g", sum);
    umt::report("heat", "\"grid_blocks\":" + std::to_string(g.blocks) + ",\"block_size\":" + std::to_string(g.bs) +
                            ",\"iters\":" + std::to_string(g.iters) + ",\"sweeps\":" + std::to_string(g.sweeps) +
                            ",\"ckpt_every\":" + std::to_string(g.ckpt_every) + ",\"direct\":" +
                            (g.direct ? "true" : "false") + ",\"latency_us\":" + std::to_string(g.latency_us) +
                            ",\"io_bytes\":" + std::to_string(checkpoints * g.n * g.n * sizeof(double)) +
                            ",\"checksum\":\"" + sum_text + "\"");
    for (const auto event : g_done) ocrEventDestroy(event);
    ocrShutdown();
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
                                       {"file", "/var/tmp/strata-umt-heat.dat"}});
    g.blocks = args.count("blocks");
    g.bs = args.count("block-size");
    g.n = g.blocks * g.bs;
    g.iters = args.count("iters");
    g.sweeps = std::max<std::uint64_t>(1, args.count("sweeps"));
    g.ckpt_every = args.count("ckpt-every");  // 0: no checkpoints (compute alone)
    g.direct = args.count("direct") != 0;
    g.latency_us = args.count("latency-us");
    if ((g.bs * g.bs * sizeof(double)) % 4096 != 0) {
        std::fprintf(stderr, "umt: --block-size=%llu: a block must be a multiple of 4 KiB for O_DIRECT\n",
                     static_cast<unsigned long long>(g.bs));
        std::exit(2);
    }
    g.fd = umt::open_data_file(args.str("file"), g.n * g.n * sizeof(double), g.direct);
    g_grid = static_cast<double*>(std::aligned_alloc(4096, g.n * g.n * sizeof(double)));
    for (std::uint64_t r = 0; r < g.n; ++r)
        for (std::uint64_t c = 0; c < g.n; ++c) g_grid[r * g.n + c] = (r == 0 || c == 0) ? 100.0 : 0.0;
    g_done.resize(g.iters * g.blocks * g.blocks);
    for (auto& event : g_done) ocrEventCreate(&event, OCR_EVENT_STICKY_T, EVT_PROP_NONE);

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
