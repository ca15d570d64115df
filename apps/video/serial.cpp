// SPDX-License-Identifier: MIT
// The serial implementation and --kernel-time (pipeline.hpp).
#include <algorithm>
#include <cstdio>
#include <random>

#include <fmt/format.h>

#include "kernel.hpp"
#include "pipeline.hpp"
#include "roles.hpp"

namespace strata::video {

int run_serial(const Options& options) {
    Context ctx(options);
    auto input = InputTask::open(ctx);
    if (!input) {
        ctx.error(input.error().what());
        return 1;
    }
    auto output = OutputTask::create(ctx);
    if (!output) {
        ctx.error(output.error().what());
        return 1;
    }
    const StreamInfo info = input->info();
    if (auto s = output->start(info); !s) {
        ctx.error(s.error().what());
        return 1;
    }
    WorkerTask worker(ctx);
    Frame in(info.frame_bytes());
    Frame out(info.frame_bytes());
    for (;;) {
        auto got = input->decode();
        if (!got) {
            ctx.error(got.error().what());
            return 1;
        }
        if (!*got) break;
        if (auto c = input->convert(in); !c) {
            ctx.error(c.error().what());
            return 1;
        }
        worker.process(in, out, info);
        if (auto w = output->accept_view(input->decoded() - 1, out); !w) {
            ctx.error(w.error().what());
            return 1;
        }
    }
    if (auto t = output->set_total(input->decoded()); !t) {
        ctx.error(t.error().what());
        return 1;
    }
    if (auto f = output->finish(); !f) {
        ctx.error(f.error().what());
        return 1;
    }
    ctx.stats.frames = input->decoded();
    ctx.stats.total_s = ctx.elapsed();
    if (auto s = ctx.write_stats(); !s) {
        ctx.error(s.error().what());
        return 1;
    }
    return 0;
}

int run_kernel_time(const Options& options) {
    const auto bytes = static_cast<std::size_t>(options.width) * static_cast<std::size_t>(options.height);
    Frame in(bytes);
    Frame out(bytes);
    std::mt19937 random(42);
    std::generate(in.begin(), in.end(), [&] { return static_cast<std::uint8_t>(random()); });
    const bool scalar = options.kernel == "scalar";
    Frame scratch;
    std::vector<double> times;
    const double start = now_s();
    for (int i = 0; i < options.repeats || now_s() - start < options.kernel_seconds; ++i) {
        const double t0 = now_s();
        edge_filter_passes(in, out, options.width, options.height, scalar, options.kernel_passes, scratch);
        times.push_back(now_s() - t0);
    }
    // The mean over the whole run is the time per frame a node gives under its CPU quota (a median
    // of single runs would miss the throttling between quota periods).
    const double mean = (now_s() - start) / static_cast<double>(times.size());
    std::sort(times.begin(), times.end());
    const double median = times[times.size() / 2];
    std::printf(
        "{\"width\": %d, \"height\": %d, \"kernel\": \"%s\", \"passes\": %d, \"runs\": %zu, \"mean_s\": %.9f, "
        "\"median_s\": %.9f, \"min_s\": %.9f, \"max_s\": %.9f, \"node\": \"%s\"}\n",
        options.width, options.height, options.kernel.c_str(), options.kernel_passes, times.size(), mean, median,
        times.front(), times.back(), options.node.c_str());
    return 0;
}

}  // namespace strata::video
