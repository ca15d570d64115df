// SPDX-License-Identifier: MIT
#include "task_loop.hpp"

#include <algorithm>
#include <cmath>
#include <ctime>

namespace strata::workflow::detail {

Result<void> run_iterations(TaskIo& io, std::uint64_t first, std::uint64_t count, bool record, TaskOutcome& outcome,
                            const std::function<void(std::uint64_t)>& on_done) {
    outcome.latency_ns.resize(io.inputs.size());
    outcome.digest.resize(io.inputs.size(), kDigestStart);
    for (std::uint64_t it = first; it < first + count; ++it) {
        const std::int64_t start = now_ns();
        for (auto& in : io.inputs) {
            if (auto r = in->post(it); !r) {
                return r;
            }
        }
        for (std::size_t i = 0; i < io.inputs.size(); ++i) {
            std::int64_t stamp = 0;
            auto words = io.inputs[i]->receive(it, stamp);
            if (!words) {
                return std::unexpected(words.error());
            }
            const std::int64_t received = now_ns();
            const std::uint64_t sum = word_sum(*words);
            if (sum != expected_sum(words->size(), io.input_producers[i], it)) {
                ++outcome.checksum_errors;
            }
            outcome.digest[i] = fold_digest(outcome.digest[i], sum);
            if (auto r = io.inputs[i]->release(it); !r) {
                return r;
            }
            if (record) {
                outcome.latency_ns[i].push_back(static_cast<double>(received - stamp));
            }
        }
        if (io.output) {
            auto words = io.output->buffer(it);
            if (!words) {
                return std::unexpected(words.error());
            }
            fill(*words, io.task, it);
            if (io.period_us > 0) {
                // The period is the least time between two handoffs of this task.
                const std::int64_t due = start + static_cast<std::int64_t>(io.period_us) * 1000;
                const std::int64_t wait = due - now_ns();
                if (wait > 0) {
                    timespec ts{static_cast<time_t>(wait / 1'000'000'000), static_cast<long>(wait % 1'000'000'000)};
                    ::nanosleep(&ts, nullptr);
                }
            }
            if (auto r = io.output->publish(it); !r) {
                return r;
            }
        }
        if (on_done) {
            on_done(it);
        }
    }
    return {};
}

EdgeReport summarize(const Edge& edge, std::vector<double> samples) {
    EdgeReport r{edge.from, edge.to, edge.method, samples.size(), 0, 0, 0, 0};
    if (samples.empty()) {
        return r;
    }
    std::ranges::sort(samples);
    auto at = [&](double q) {
        const auto i = static_cast<std::size_t>(std::llround(q * static_cast<double>(samples.size() - 1)));
        return samples[std::min(i, samples.size() - 1)];
    };
    r.p50_ns = at(0.50);
    r.p90_ns = at(0.90);
    r.p99_ns = at(0.99);
    r.max_ns = samples.back();
    return r;
}

void finish_report(const Workflow& wf, double seconds, Report& report) {
    report.iterations = wf.iterations;
    report.tasks = wf.tasks.size();
    report.seconds = seconds;
    double per_iteration = 0;
    for (const auto& e : wf.edges) {
        per_iteration += static_cast<double>(wf.tasks[static_cast<std::size_t>(wf.task_index(e.from))].data_size);
    }
    report.bytes = per_iteration * static_cast<double>(wf.iterations);
    report.throughput_mb_s = seconds > 0 ? report.bytes / seconds / 1e6 : 0;
    report.iterations_per_s = seconds > 0 ? static_cast<double>(wf.iterations) / seconds : 0;
}

}  // namespace strata::workflow::detail
