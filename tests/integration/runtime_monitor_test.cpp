// The runtime with the real blocking monitor: a task blocked in read() on a
// pipe leaves its core to an idle worker that runs the next task at once,
// and the unblocked worker returns to the idle pool afterwards.
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "strata/runtime.hpp"
#include "support/capability.hpp"
#include "support/result.hpp"

namespace strata::runtime {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

class RuntimeWithMonitor : public ::testing::TestWithParam<const char*> {};

TEST_P(RuntimeWithMonitor, the_next_task_starts_soon_after_a_task_blocks_and_the_unblocked_worker_surrenders) {
    ::setenv("STRATA_MONITOR", GetParam(), 1);
    Options options;
    options.cpus = {sched_getcpu()};
    options.monitor = monitor_from_env();
    auto started = Runtime::start(options);
    ::unsetenv("STRATA_MONITOR");
    STRATA_REQUIRE(started.has_value(), started ? "" : started.error().what());
    auto sut = std::move(*started);
    ASSERT_EQ(sut->monitor_backend(), GetParam());

    constexpr int rounds = 20;
    std::vector<double> latencies_us;
    for (int round = 0; round < rounds; ++round) {
        int fds[2];
        ASSERT_EQ(::pipe(fds), 0);
        std::atomic<Clock::time_point::rep> blocked_at{0};
        std::atomic<Clock::time_point::rep> next_started_at{0};
        TaskGroup group;
        sut->spawn(
            [&] {
                char byte = 0;
                blocked_at = Clock::now().time_since_epoch().count();
                EXPECT_EQ(::read(fds[0], &byte, 1), 1);
            },
            &group);
        // Queued only once the first task is in read(): with one CPU only a woken worker can run it.
        while (blocked_at.load() == 0) std::this_thread::sleep_for(50us);
        sut->spawn(
            [&] {
                next_started_at = Clock::now().time_since_epoch().count();
                EXPECT_EQ(::write(fds[1], "x", 1), 1);
            },
            &group);
        sut->wait(group);
        ::close(fds[0]);
        ::close(fds[1]);
        latencies_us.push_back(static_cast<double>(next_started_at.load() - blocked_at.load()) / 1e3);
    }
    std::sort(latencies_us.begin(), latencies_us.end());
    const double median = latencies_us[rounds / 2];
    const auto stats = sut->stats();
    ASSERT_EQ(stats.size(), 1U);
    RecordProperty("median_latency_us", std::to_string(median));
    std::printf(
        "%s: block -> next task start: median %.1f us, max %.1f us; blocks %llu, unblocks %llu, "
        "surrenders %llu, wakes %llu\n",
        GetParam(), median, latencies_us.back(), static_cast<unsigned long long>(stats[0].monitor.blocks),
        static_cast<unsigned long long>(stats[0].monitor.unblocks),
        static_cast<unsigned long long>(stats[0].surrenders), static_cast<unsigned long long>(stats[0].wakes));
    // docs/runtime.md claims medians of about 115 us (ebpf) and 120 us (proc)
    // on this 2-core machine; the bound is 4x the claim.
    const double claimed_us = std::string_view(GetParam()) == "ebpf" ? 115.0 : 120.0;
    EXPECT_LT(median, 4 * claimed_us);
    // ebpf sees every block and every unblock. proc samples every 1 ms: it sees
    // the blocks (each lasts until the next task runs), but a woken worker that
    // runs for less than a period and then sleeps in the idle pool may never be
    // sampled runnable, so proc's unblock count is not a promise.
    if (std::string_view(GetParam()) == "ebpf") {
        EXPECT_GE(stats[0].monitor.blocks, static_cast<std::uint64_t>(rounds));
        EXPECT_GE(stats[0].monitor.unblocks, static_cast<std::uint64_t>(rounds));
    } else {
        EXPECT_GE(stats[0].monitor.blocks, 1U);
    }
    EXPECT_GE(stats[0].wakes, 1U);
}

INSTANTIATE_TEST_SUITE_P(Backends, RuntimeWithMonitor, ::testing::Values("ebpf", "proc"),
                         [](const auto& param_info) { return std::string(param_info.param); });

}  // namespace
}  // namespace strata::runtime
