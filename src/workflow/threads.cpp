// SPDX-License-Identifier: MIT
// Method threads: every task is a thread of this process; a producer hands a
// pointer to its buffer over with a mutex and condition variables (the
// paper's baseline), with the same slots as the segment so it never
// overwrites data a consumer still reads.
#include <barrier>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "task_loop.hpp"

namespace strata::workflow {

namespace detail {
namespace {

struct ThreadSlot {
    std::vector<std::uint64_t> words;
    std::uint64_t published = 0;  // iteration + 1
    std::uint32_t pending = 0;
    std::int64_t stamp_ns = 0;
};

struct ThreadOutbox {
    std::mutex mutex;
    std::condition_variable published;
    std::condition_variable released;
    std::vector<ThreadSlot> slots;
    std::uint32_t consumers = 0;
};

class ThreadOutput final : public OutputPort {
public:
    explicit ThreadOutput(ThreadOutbox& box) : box_(box) {}
    Result<std::span<std::uint64_t>> buffer(std::uint64_t it) override {
        auto& slot = box_.slots[it % box_.slots.size()];
        std::unique_lock lock(box_.mutex);
        box_.released.wait(lock, [&] { return slot.pending == 0; });
        return std::span<std::uint64_t>(slot.words);
    }
    Result<void> publish(std::uint64_t it) override {
        auto& slot = box_.slots[it % box_.slots.size()];
        {
            std::lock_guard lock(box_.mutex);
            slot.pending = box_.consumers;
            slot.stamp_ns = now_ns();
            slot.published = it + 1;
        }
        box_.published.notify_all();
        return {};
    }

private:
    ThreadOutbox& box_;
};

class ThreadInput final : public InputPort {
public:
    explicit ThreadInput(ThreadOutbox& box) : box_(box) {}
    Result<std::span<const std::uint64_t>> receive(std::uint64_t it, std::int64_t& stamp_ns) override {
        auto& slot = box_.slots[it % box_.slots.size()];
        std::unique_lock lock(box_.mutex);
        box_.published.wait(lock, [&] { return slot.published == it + 1; });
        stamp_ns = slot.stamp_ns;
        return std::span<const std::uint64_t>(slot.words);
    }
    Result<void> release(std::uint64_t it) override {
        auto& slot = box_.slots[it % box_.slots.size()];
        bool last = false;
        {
            std::lock_guard lock(box_.mutex);
            last = --slot.pending == 0;
        }
        if (last) {
            box_.released.notify_one();
        }
        return {};
    }

private:
    ThreadOutbox& box_;
};

}  // namespace
}  // namespace detail

Result<Report> run_threads(const Workflow& wf, const Progress& progress) {
    using namespace detail;
    if (auto r = validate(wf); !r) {
        return std::unexpected(r.error());
    }
    if (!wf.uses_threads()) {
        return make_error(Errc::invalid_argument,
                          "edge[0].method={}: run_threads runs workflows whose edges all use threads",
                          to_string(wf.edges.front().method));
    }
    const std::size_t n = wf.tasks.size();
    std::vector<ThreadOutbox> boxes(n);
    std::vector<TaskIo> io(n);
    for (std::size_t t = 0; t < n; ++t) {
        io[t].task = static_cast<int>(t);
        io[t].period_us = wf.tasks[t].period_us;
        boxes[t].slots.resize(wf.slots);
        for (auto& s : boxes[t].slots) {
            s.words.assign(wf.tasks[t].data_size / 8, 0);
        }
    }
    for (std::size_t e = 0; e < wf.edges.size(); ++e) {
        const auto from = static_cast<std::size_t>(wf.task_index(wf.edges[e].from));
        const auto to = static_cast<std::size_t>(wf.task_index(wf.edges[e].to));
        if (boxes[from].consumers++ == 0) {
            io[from].output = std::make_unique<ThreadOutput>(boxes[from]);
        }
        io[to].inputs.push_back(std::make_unique<ThreadInput>(boxes[from]));
        io[to].input_edges.push_back(static_cast<int>(e));
        io[to].input_producers.push_back(static_cast<int>(from));
    }
    const int reporter = wf.topological_order().back();  // a sink: its iterations are the workflow's
    const std::uint64_t total = wf.warmup + wf.iterations;
    std::vector<TaskOutcome> outcomes(n);
    std::vector<Result<void>> results(n);
    std::barrier sync(static_cast<std::ptrdiff_t>(n + 1));
    {
        std::vector<std::jthread> threads;
        threads.reserve(n);
        for (std::size_t t = 0; t < n; ++t) {
            threads.emplace_back([&, t] {
                std::function<void(std::uint64_t)> on_done;
                if (static_cast<int>(t) == reporter && progress) {
                    on_done = [&](std::uint64_t it) { progress(it + 1, total); };
                }
                results[t] = run_iterations(io[t], 0, wf.warmup, false, outcomes[t], on_done);
                sync.arrive_and_wait();
                sync.arrive_and_wait();
                if (results[t]) {
                    results[t] = run_iterations(io[t], wf.warmup, wf.iterations, true, outcomes[t], on_done);
                }
            });
        }
        sync.arrive_and_wait();  // warmup done everywhere
        const std::int64_t start = now_ns();
        sync.arrive_and_wait();
        threads.clear();  // joins
        Report report;
        detail::finish_report(wf, static_cast<double>(now_ns() - start) / 1e9, report);
        report.edges.resize(wf.edges.size());
        for (std::size_t t = 0; t < n; ++t) {
            if (!results[t]) {
                return std::unexpected(results[t].error());
            }
            report.checksum_errors += outcomes[t].checksum_errors;
            for (std::size_t i = 0; i < io[t].inputs.size(); ++i) {
                const auto e = static_cast<std::size_t>(io[t].input_edges[i]);
                report.edges[e] = summarize(wf.edges[e], std::move(outcomes[t].latency_ns[i]));
                report.edges[e].digest = outcomes[t].digest[i];
            }
        }
        return report;
    }
}

}  // namespace strata::workflow
