// SPDX-License-Identifier: MIT
// Shared by the runtime's cover-priority tests with the real BPF monitor
// (runtime_suspend_test.cpp, runtime_standby_test.cpp).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <thread>

#include <gtest/gtest.h>

#include "strata/runtime.hpp"

namespace strata::test {

/// A runtime on `cpu` alone with the ebpf monitor and cover priority
/// `priority`; null (and a test failure) when it cannot start.
inline std::unique_ptr<runtime::Runtime> start_with_ebpf(int cpu, runtime::CoverPriority priority) {
    ::setenv("STRATA_MONITOR", "ebpf", 1);
    runtime::Options options;
    options.cpus = {cpu};
    options.monitor = runtime::monitor_from_env();
    options.cover_priority = priority;
    auto started = runtime::Runtime::start(options);
    ::unsetenv("STRATA_MONITOR");
    if (!started) {
        ADD_FAILURE() << started.error().what();
        return nullptr;
    }
    return std::move(*started);
}

// A task graph that blocks, computes and waits for its own children: the
// worker that blocked may need the task a cover (suspended, standing by) holds.

struct DependentRun {
    int done = 0;  ///< outer tasks finished
    long sum = 0;  ///< sum of the inner tasks' indices (each outer adds 0+1+2+3)
    std::chrono::steady_clock::duration took{};
};

/// `outer` tasks; each blocks (a sleep is a block to the monitor), then
/// spawns four inner tasks that compute and half of which block, waits for
/// them and computes again. Returns once all are done.
inline DependentRun run_dependent_tasks(runtime::Runtime& rt, int outer) {
    using Clock = std::chrono::steady_clock;
    const auto spin = [](std::chrono::microseconds d) {
        const auto until = Clock::now() + d;
        while (Clock::now() < until) {
        }
    };
    std::atomic<int> done{0};
    std::atomic<long> sum{0};
    const auto started = Clock::now();
    runtime::TaskGroup all;
    for (int i = 0; i < outer; ++i) {
        rt.spawn(
            [&, i] {
                std::this_thread::sleep_for(std::chrono::microseconds(200 + 50 * (i % 7)));
                runtime::TaskGroup inner;
                for (int j = 0; j < 4; ++j) {
                    rt.spawn(
                        [&, j] {
                            spin(std::chrono::microseconds(300 + 100 * j));
                            if (j % 2 == 0) std::this_thread::sleep_for(std::chrono::microseconds(300));
                            sum.fetch_add(j);
                        },
                        &inner);
                }
                rt.wait(inner);
                spin(std::chrono::microseconds(500));
                done.fetch_add(1);
            },
            &all);
    }
    rt.wait(all);
    return {done.load(), sum.load(), Clock::now() - started};
}

}  // namespace strata::test
