// SPDX-License-Identifier: MIT
// The runtime with the real blocking monitor: a task blocked in read() on a
// pipe leaves its core to an idle worker that runs the next task at once,
// and the unblocked worker returns to the idle pool afterwards.
#include <sched.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
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

// Cover priority (docs/runtime.md): a worker woken to cover for a blocked one
// runs at SCHED_IDLE while the blocked worker is away, and normal again once
// that worker woke and surrendered; the woken worker gets the core at once
// instead of waiting for the cover's time slice, so the core is not
// oversubscribed for longer than that wake-up.
struct CoverRound {
    int policy_while_covering = -1;
    int policy_after = -1;
    double wake_to_run_us = 0;     // from the write that wakes the blocked worker to its read() returning
    double oversubscribed_us = 0;  // the monitor's oversubscribed time during the round
    std::string stats;             // the core's counters after the round, for failure messages
};

// Fills `out` (a void function: STRATA_REQUIRE returns from it).
void run_cover_rounds(CoverPriority priority, int rounds, std::vector<CoverRound>& out) {
    ::setenv("STRATA_MONITOR", "ebpf", 1);
    Options options;
    options.cpus = {sched_getcpu()};
    options.monitor = monitor_from_env();
    options.cover_priority = priority;
    auto started = Runtime::start(options);
    ::unsetenv("STRATA_MONITOR");
    STRATA_REQUIRE(started.has_value(), started ? "" : started.error().what());
    auto sut = std::move(*started);
    EXPECT_EQ(sut->cover_priority(), priority) << sut->cover_reason();
    const auto policy = [] { return ::sched_getscheduler(0) & ~SCHED_RESET_ON_FORK; };
    const auto now_ns = [] { return Clock::now().time_since_epoch().count(); };

    for (int round = 0; round < rounds; ++round) {
        CoverRound r;
        int fds[2];
        EXPECT_EQ(::pipe(fds), 0);
        std::atomic<bool> blocked{false}, covering{false}, surrendered{false};
        std::atomic<Clock::time_point::rep> woke_at{0};
        TaskGroup group;
        sut->spawn(
            [&] {
                char byte = 0;
                blocked = true;
                EXPECT_EQ(::read(fds[0], &byte, 1), 1);
                woke_at = now_ns();
            },
            &group);
        while (!blocked.load()) std::this_thread::sleep_for(50us);
        std::this_thread::sleep_for(1ms);  // in read() by now
        sut->spawn(
            [&] {
                r.policy_while_covering = policy();
                covering = true;
                // Computes on until the blocked worker has woken and left the core.
                const auto deadline = Clock::now() + 2s;
                while (sut->stats()[0].surrenders == 0 || woke_at.load() == 0) {
                    if (Clock::now() > deadline) return;
                }
                surrendered = true;
                const auto settle = Clock::now() + 2ms;  // the restore is made by the worker that leaves
                while (Clock::now() < settle) {
                }
                r.policy_after = policy();
            },
            &group);
        while (!covering.load()) std::this_thread::sleep_for(50us);
        std::this_thread::sleep_for(3ms);  // the cover computes
        const auto before = sut->stats()[0];
        const auto written_at = now_ns();
        EXPECT_EQ(::write(fds[1], "x", 1), 1);
        sut->wait(group);
        const auto after = sut->stats()[0];
        ::close(fds[0]);
        ::close(fds[1]);
        r.wake_to_run_us = static_cast<double>(woke_at.load() - written_at) / 1e3;
        r.oversubscribed_us = std::chrono::duration<double, std::micro>(after.monitor.oversubscribed_time -
                                                                        before.monitor.oversubscribed_time)
                                  .count();
        EXPECT_TRUE(surrendered.load()) << "round " << round << ": the woken worker never surrendered";
        r.stats = "wakes " + std::to_string(after.wakes) + ", workers " + std::to_string(after.workers) + ", covers " +
                  std::to_string(after.covers) + ", restores " + std::to_string(after.restores) + ", surrenders " +
                  std::to_string(after.surrenders) + ", blocks " + std::to_string(after.monitor.blocks) +
                  ", unblocks " + std::to_string(after.monitor.unblocks);
        out.push_back(r);
        // Starts the next round from one active worker: the stats' surrender count is cumulative.
        sut->stop();
        auto restarted = Runtime::start(options);
        STRATA_REQUIRE(restarted.has_value(), restarted ? "" : restarted.error().what());
        sut = std::move(*restarted);
    }
}

double median_of(std::vector<CoverRound> rounds, double CoverRound::*field) {
    std::sort(rounds.begin(), rounds.end(), [&](const auto& a, const auto& b) { return a.*field < b.*field; });
    return rounds[rounds.size() / 2].*field;
}

TEST(RuntimeCoverPriority, a_cover_runs_at_sched_idle_and_the_woken_worker_gets_the_core_at_once) {
    constexpr int rounds = 15;
    std::vector<CoverRound> idle;
    std::vector<CoverRound> normal;
    run_cover_rounds(CoverPriority::idle, rounds, idle);
    if (HasFatalFailure() || IsSkipped()) return;
    run_cover_rounds(CoverPriority::normal, rounds, normal);
    if (HasFatalFailure() || IsSkipped()) return;
    ASSERT_EQ(idle.size(), static_cast<std::size_t>(rounds));
    ASSERT_EQ(normal.size(), static_cast<std::size_t>(rounds));
    // Every round should show it; one round in about two hundred does not
    // (the cover starts its task before it has lowered itself, a race not yet
    // understood, docs/runtime.md), so one miss per policy is tolerated.
    int idle_covering = 0, idle_restored = 0, normal_covering = 0, normal_after = 0;
    std::string misses;
    for (std::size_t i = 0; i < idle.size(); ++i) {
        idle_covering += idle[i].policy_while_covering == SCHED_IDLE ? 1 : 0;
        idle_restored += idle[i].policy_after == SCHED_OTHER ? 1 : 0;
        normal_covering += normal[i].policy_while_covering == SCHED_OTHER ? 1 : 0;
        normal_after += normal[i].policy_after == SCHED_OTHER ? 1 : 0;
        if (idle[i].policy_while_covering != SCHED_IDLE || idle[i].policy_after != SCHED_OTHER) {
            misses += "; idle round " + std::to_string(i) + ": policy " +
                      std::to_string(idle[i].policy_while_covering) + " while covering, " +
                      std::to_string(idle[i].policy_after) + " after (" + idle[i].stats + ")";
        }
    }
    EXPECT_GE(idle_covering, rounds - 1) << "covers at SCHED_IDLE" << misses;
    EXPECT_GE(idle_restored, rounds - 1) << "covers back to normal" << misses;
    EXPECT_EQ(normal_covering, rounds) << "with CoverPriority::normal a cover keeps the normal policy";
    EXPECT_EQ(normal_after, rounds);
    const double idle_over = median_of(idle, &CoverRound::oversubscribed_us);
    const double normal_over = median_of(normal, &CoverRound::oversubscribed_us);
    const double idle_wake = median_of(idle, &CoverRound::wake_to_run_us);
    const double normal_wake = median_of(normal, &CoverRound::wake_to_run_us);
    std::printf(
        "cover priority idle: oversubscribed %.1f us, wake -> run %.1f us (medians of %d); normal: %.1f us, %.1f us\n",
        idle_over, idle_wake, rounds, normal_over, normal_wake);
    RecordProperty("idle_oversubscribed_us", std::to_string(idle_over));
    RecordProperty("normal_oversubscribed_us", std::to_string(normal_over));
    // The woken worker preempts its SCHED_IDLE cover at its wake-up, reaches
    // the end of its task and surrenders: tens of microseconds, not a slice.
    EXPECT_LT(idle_over, 300.0);
    EXPECT_LT(idle_wake, 300.0);
}

// The leader's scan (Options::leader_period, leader.cpp): with the BPF
// monitor it runs every period only while some core has a blocked worker or a
// cover; on compute-only work it dozes instead of preempting a worker 1000
// times a second, and a task that blocks afterwards is still covered at once
// (the monitor's event, not the scan, wakes the cover).
TEST(RuntimeLeader, dozes_on_compute_only_work_and_a_block_is_still_covered_at_once) {
    ::setenv("STRATA_MONITOR", "ebpf", 1);
    Options options;
    options.cpus = {sched_getcpu()};
    options.monitor = monitor_from_env();
    auto started = Runtime::start(options);
    ::unsetenv("STRATA_MONITOR");
    STRATA_REQUIRE(started.has_value(), started ? "" : started.error().what());
    auto sut = std::move(*started);
    ASSERT_EQ(sut->monitor_backend(), "ebpf");

    // 300 ms of compute in 30 tasks on the one core.
    TaskGroup compute;
    for (int i = 0; i < 30; ++i) {
        sut->spawn(
            [] {
                const auto until = Clock::now() + 10ms;
                while (Clock::now() < until) {
                }
            },
            &compute);
    }
    const auto compute_started = Clock::now();
    sut->wait(compute);
    const double compute_ms = std::chrono::duration<double, std::milli>(Clock::now() - compute_started).count();
    const auto scans = sut->stats()[0].scans;
    std::printf("leader: %llu scans in %.0f ms of compute-only work\n", static_cast<unsigned long long>(scans),
                compute_ms);
    // Scanning every 1 ms period would make about 300; dozing, 10 scans
    // before it dozes and one per 50 ms after.
    EXPECT_LT(scans, 60U) << "over " << compute_ms << " ms";
    EXPECT_GE(compute_ms, 290.0);

    // Now a task blocks: the next task starts within a few milliseconds.
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
    const double latency_ms = static_cast<double>(next_started_at.load() - blocked_at.load()) / 1e6;
    EXPECT_LT(latency_ms, 20.0) << "block -> next task start while the leader dozed";
    EXPECT_GE(sut->stats()[0].wakes, 1U);
}

}  // namespace
}  // namespace strata::runtime
