// SPDX-License-Identifier: MIT
// The runtime with the real blocking monitor: a task blocked in read() on a
// pipe leaves its core to an idle worker that runs the next task, and the
// unblocked worker returns to the idle pool afterwards.
//
// No wall-clock bound that load can break: the tests assert who ran what and
// at which policy, waiting for each event with a generous hang bound. The
// latencies (block -> next task, wake -> run, time oversubscribed) are
// printed and recorded as test properties; docs/runtime.md quotes them.
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

#include "runtime_cover_support.hpp"
#include "strata/runtime.hpp"
#include "support/capability.hpp"
#include "support/result.hpp"

namespace strata::runtime {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

class RuntimeWithMonitor : public ::testing::TestWithParam<const char*> {};

TEST_P(RuntimeWithMonitor, a_task_queued_behind_a_blocked_one_starts_on_a_woken_worker_of_the_same_core) {
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
        // Queued once the first task has started: with one CPU only a woken
        // worker can run it, and only it can end the first task's read().
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
    // The latency is printed, not bounded (docs/runtime.md, "Measured"): the
    // woken worker shares its CPU with whatever else runs there. Every round
    // ended, so the second task ran while the first was blocked.
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
// that worker woke and surrendered. That the woken worker then gets the core
// at once, instead of waiting for the cover's time slice, is a latency: it is
// printed (wake -> run, time oversubscribed), with `normal` beside it.
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

    int set_up_again = 0;
    for (int round = 0; round < rounds && set_up_again < 4 * rounds;) {
        CoverRound r;
        int fds[2];
        EXPECT_EQ(::pipe(fds), 0);
        std::atomic<bool> go{false}, abandon{false}, surrendered{false};
        std::atomic<pid_t> blocked_tid{0}, cover_tid{0};
        std::atomic<std::uint64_t> progress{0};
        std::atomic<Clock::time_point::rep> woke_at{0};
        const pid_t first_worker = test::only_worker_once_parked();
        TaskGroup group;
        sut->spawn(
            [&] {
                char byte = 0;
                blocked_tid = static_cast<pid_t>(::gettid());
                while (!go.load()) {
                }
                EXPECT_EQ(::read(fds[0], &byte, 1), 1);
                woke_at = now_ns();
            },
            &group);
        EXPECT_TRUE(test::wait_for([&] { return blocked_tid.load() != 0; })) << "the first task never started";
        // Queued behind the first task, which then blocks: the monitor's event wakes the cover for it.
        sut->spawn(
            [&] {
                r.policy_while_covering = policy();
                cover_tid = static_cast<pid_t>(::gettid());
                // Computes on until the blocked worker has woken and left the core.
                const auto deadline = Clock::now() + test::kHang;
                while (sut->stats()[0].surrenders == 0 || woke_at.load() == 0) {
                    progress.fetch_add(1, std::memory_order_relaxed);
                    if (abandon.load() || Clock::now() > deadline) return;
                }
                surrendered = true;
                // The restore is made by the worker that leaves, once it sleeps.
                const auto until = Clock::now() + test::kHang;
                while (policy() != SCHED_OTHER && Clock::now() < until) {
                }
                r.policy_after = policy();
            },
            &group);
        go = true;
        EXPECT_TRUE(test::wait_for([&] { return progress.load() > 1000 && test::thread_state(blocked_tid) == 'S'; }))
            << "the cover never computed";
        const bool scenario = test::one_blocked_worker_and_its_cover(*sut, first_worker, blocked_tid, cover_tid);
        abandon = !scenario;
        const auto before = sut->stats()[0];
        const auto written_at = now_ns();
        EXPECT_EQ(::write(fds[1], "x", 1), 1);
        sut->wait(group);
        const auto after = sut->stats()[0];
        ::close(fds[0]);
        ::close(fds[1]);
        if (!scenario) {
            ++set_up_again;
            sut->stop();
            auto restarted = Runtime::start(options);
            STRATA_REQUIRE(restarted.has_value(), restarted ? "" : restarted.error().what());
            sut = std::move(*restarted);
            continue;
        }
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
        ++round;
        // Starts the next round from one active worker: the stats' surrender count is cumulative.
        sut->stop();
        auto restarted = Runtime::start(options);
        STRATA_REQUIRE(restarted.has_value(), restarted ? "" : restarted.error().what());
        sut = std::move(*restarted);
    }
    std::printf("cover priority %s: %d set-ups were not the scenario\n", std::string(to_string(priority)).c_str(),
                set_up_again);
}

double median_of(std::vector<CoverRound> rounds, double CoverRound::*field) {
    std::sort(rounds.begin(), rounds.end(), [&](const auto& a, const auto& b) { return a.*field < b.*field; });
    return rounds[rounds.size() / 2].*field;
}

TEST(RuntimeCoverPriority, a_cover_runs_at_sched_idle_and_is_normal_again_once_the_woken_worker_surrendered) {
    constexpr int rounds = 15;
    std::vector<CoverRound> idle;
    std::vector<CoverRound> normal;
    run_cover_rounds(CoverPriority::idle, rounds, idle);
    if (HasFatalFailure() || IsSkipped()) return;
    run_cover_rounds(CoverPriority::normal, rounds, normal);
    if (HasFatalFailure() || IsSkipped()) return;
    ASSERT_EQ(idle.size(), static_cast<std::size_t>(rounds)) << "the scenario was set up too rarely";
    ASSERT_EQ(normal.size(), static_cast<std::size_t>(rounds)) << "the scenario was set up too rarely";
    // The round in about two hundred that used to show the cover's task at
    // the normal policy (covers 1, restores 0) had the first task on the
    // cover itself, woken for a moment's block of the first worker: not the
    // scenario, now set up again (test::one_blocked_worker_and_its_cover).
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
    EXPECT_EQ(idle_covering, rounds) << "covers at SCHED_IDLE" << misses;
    EXPECT_EQ(idle_restored, rounds) << "covers back to normal" << misses;
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
    RecordProperty("idle_wake_to_run_us", std::to_string(idle_wake));
    RecordProperty("normal_wake_to_run_us", std::to_string(normal_wake));
}

// The leader's scan (Options::leader_period, leader.cpp): with the BPF
// monitor it runs every period only while some core has a blocked worker or a
// cover; on compute-only work it dozes instead of preempting a worker 1000
// times a second, and a task that blocks while it dozes is still covered
// before the dozing leader's next scan (the monitor's event, not the scan,
// wakes the cover).
std::unique_ptr<Runtime> start_with_leader_period(std::chrono::microseconds period) {
    ::setenv("STRATA_MONITOR", "ebpf", 1);
    Options options;
    options.cpus = {sched_getcpu()};
    options.monitor = monitor_from_env();
    options.leader_period = period;
    auto started = Runtime::start(options);
    ::unsetenv("STRATA_MONITOR");
    if (!started) {
        ADD_FAILURE() << started.error().what();
        return nullptr;
    }
    EXPECT_EQ((*started)->monitor_backend(), "ebpf");
    return std::move(*started);
}

TEST(RuntimeLeader, dozes_on_compute_only_work_and_a_block_is_covered_before_its_next_scan) {
    STRATA_REQUIRE(test::is_root(), "root, for the BPF monitor");
    constexpr auto kPeriod = std::chrono::microseconds(1000);  // the default
    auto sut = start_with_leader_period(kPeriod);
    ASSERT_NE(sut, nullptr);
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
    const auto blocks_before = sut->stats()[0].monitor.blocks;
    const auto compute_started = Clock::now();
    sut->wait(compute);
    const auto compute_time = Clock::now() - compute_started;
    const auto scans = sut->stats()[0].scans;
    std::printf("leader: %llu scans in %.0f ms of compute-only work, %llu blocks\n",
                static_cast<unsigned long long>(scans), std::chrono::duration<double, std::milli>(compute_time).count(),
                static_cast<unsigned long long>(sut->stats()[0].monitor.blocks - blocks_before));
    // Dozing, the leader makes 10 scans and then one per 50 periods of the
    // time the compute took (measured here; longer under load), and 10 more
    // after each block of the worker (a contended lock, under load), which
    // the monitor reports. Scanning every period it would make one per
    // period, or, under load, one per period and the time it waits for its
    // CPU: still more than twice the dozing count while that wait stays under
    // 48 periods.
    const auto blocks = sut->stats()[0].monitor.blocks - blocks_before;
    const auto dozing_scans = 10 * (1 + blocks) + static_cast<std::uint64_t>(compute_time / (50 * kPeriod));
    EXPECT_GE(compute_time, 290ms);
    EXPECT_LT(scans, 2 * dozing_scans) << "the leader scanned at its period; dozing makes " << dozing_scans << " ("
                                       << blocks << " blocks)";

    // A leader that dozes for 50 periods of 100 ms: the block must be covered
    // long before the 5 s it would take the dozing leader to scan again.
    constexpr auto kLongPeriod = std::chrono::microseconds(100'000);
    auto dozing = start_with_leader_period(kLongPeriod);
    ASSERT_NE(dozing, nullptr);
    // Dozing: no scan for three periods (after ten settled scans).
    const auto dozes = [&] {
        const auto scans_before = dozing->stats()[0].scans;
        std::this_thread::sleep_for(3 * kLongPeriod);
        return scans_before >= 10 && dozing->stats()[0].scans == scans_before;
    };
    ASSERT_TRUE(test::wait_for(dozes)) << "the leader never dozed";
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    std::atomic<bool> started{false}, go{false};
    std::atomic<Clock::time_point::rep> blocked_at{0};
    std::atomic<Clock::time_point::rep> next_started_at{0};
    TaskGroup group;
    dozing->spawn(
        [&] {
            char byte = 0;
            started = true;
            while (!go.load()) {
            }
            blocked_at = Clock::now().time_since_epoch().count();
            EXPECT_EQ(::read(fds[0], &byte, 1), 1);
        },
        &group);
    while (!started.load()) std::this_thread::sleep_for(50us);
    // Queued before the block, so that only the block's event can get it run
    // (a spawn onto a core without a ready worker would attend to it itself).
    dozing->spawn(
        [&] {
            next_started_at = Clock::now().time_since_epoch().count();
            EXPECT_EQ(::write(fds[1], "x", 1), 1);
        },
        &group);
    go = true;
    dozing->wait(group);
    ::close(fds[0]);
    ::close(fds[1]);
    const auto latency = std::chrono::nanoseconds(next_started_at.load() - blocked_at.load());
    std::printf("leader dozing: block -> next task start %.3f ms\n",
                std::chrono::duration<double, std::milli>(latency).count());
    // The test's claim: covered by the block's event, not by the dozing leader's next scan 50
    // periods on (half of that was the bound before: a loaded machine may delay a wake by seconds).
    EXPECT_LT(latency, 50 * kLongPeriod) << "block -> next task start while the leader dozed";
    EXPECT_GE(dozing->stats()[0].wakes, 1U);
}

}  // namespace
}  // namespace strata::runtime
