// SPDX-License-Identifier: MIT
// Options::workers (issue 26): that many workers run tasks side by side, more
// than the CPUs if asked, and a core with several keeps them all while it
// wakes a cover only when all are blocked; spawn_prioritized orders queued
// tasks by priority.
#include <sched.h>
#include <unistd.h>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "runtime_fake_monitor.hpp"
#include "strata/runtime.hpp"
#include "support/result.hpp"

namespace strata::runtime {
namespace {

using namespace std::chrono_literals;

std::uint64_t total(const std::vector<CoreStats>& stats, std::uint64_t CoreStats::*field) {
    std::uint64_t sum = 0;
    for (const auto& s : stats) sum += s.*field;
    return sum;
}

// Spawns `count` tasks that each wait until all have started (as MPI ranks
// on OCR wait for each other); true when they all ran at once before the
// deadline, which only a hang reaches.
bool run_side_by_side(Runtime& sut, int count) {
    std::atomic<int> arrived{0};
    std::atomic<bool> all{true};
    TaskGroup group;
    for (int i = 0; i < count; ++i) {
        sut.spawn(
            [&] {
                arrived.fetch_add(1);
                const auto deadline = std::chrono::steady_clock::now() + 20s;
                while (arrived.load() < count) {
                    if (std::chrono::steady_clock::now() > deadline) {
                        all = false;
                        return;
                    }
                }
            },
            &group);
    }
    sut.wait(group);
    return all.load();
}

TEST(RuntimeWorkers, three_workers_on_one_cpu_run_three_tasks_at_once) {
    Options options;
    options.monitor = no_monitor();
    options.cpus = {sched_getcpu()};
    options.workers = 3;
    STRATA_ASSERT_ASSIGN(sut, Runtime::start(options));
    EXPECT_EQ(sut->workers(), 3);
    EXPECT_EQ(sut->cpus().size(), 1U);
    EXPECT_TRUE(run_side_by_side(*sut, 3));
    EXPECT_EQ(total(sut->stats(), &CoreStats::workers), 3U);
}

TEST(RuntimeWorkers, more_workers_than_cpus_are_spread_over_every_cpu) {
    Options options;
    options.monitor = no_monitor();
    STRATA_ASSERT_ASSIGN(probe, Runtime::start(options));
    const auto cpus = probe->cpus().size();
    probe->stop();
    options.workers = static_cast<int>(2 * cpus + 1);
    STRATA_ASSERT_ASSIGN(sut, Runtime::start(options));
    EXPECT_EQ(sut->workers(), options.workers);
    EXPECT_TRUE(run_side_by_side(*sut, options.workers));
    const auto stats = sut->stats();
    ASSERT_EQ(stats.size(), cpus);
    EXPECT_EQ(stats.front().workers, 3U);  // the first core takes the one left over
    EXPECT_EQ(total(stats, &CoreStats::workers), static_cast<std::uint64_t>(options.workers));
}

TEST(RuntimeWorkers, one_worker_takes_the_first_cpu_only) {
    Options options;
    options.monitor = no_monitor();
    STRATA_ASSERT_ASSIGN(all, Runtime::start(options));
    const int first = all->cpus().front();
    all->stop();
    options.workers = 1;
    STRATA_ASSERT_ASSIGN(sut, Runtime::start(options));
    EXPECT_EQ(sut->workers(), 1);
    ASSERT_EQ(sut->cpus().size(), 1U);
    EXPECT_EQ(sut->cpus().front(), first);
}

TEST(RuntimeWorkers, a_worker_count_out_of_range_is_refused_naming_it) {
    for (int workers : {-1, 4097}) {
        Options options;
        options.monitor = no_monitor();
        options.workers = workers;
        auto sut = Runtime::start(options);
        ASSERT_FALSE(sut);
        EXPECT_EQ(sut.error().code, Errc::invalid_argument);
        EXPECT_NE(std::string(sut.error().what()).find("workers=" + std::to_string(workers)), std::string::npos);
    }
    for (const char* text : {"0", "many", "4097", "3x", ""}) {
        auto parsed = parse_workers(text, "STRATA_WORKERS");
        ASSERT_FALSE(parsed) << text;
        EXPECT_NE(std::string(parsed.error().what()).find(std::string("STRATA_WORKERS=") + text), std::string::npos);
    }
    STRATA_ASSERT_ASSIGN(five, parse_workers("5", "STRATA_WORKERS"));
    EXPECT_EQ(five, 5);
}

TEST(RuntimeWorkers, strata_workers_sets_the_count) {
    ::setenv("STRATA_WORKERS", "6", 1);
    auto options = Options::from_env();
    ::unsetenv("STRATA_WORKERS");
    STRATA_ASSERT_ASSIGN(parsed, std::move(options));
    EXPECT_EQ(parsed.workers, 6);
    ::setenv("STRATA_WORKERS", "none", 1);
    auto bad = Options::from_env();
    ::unsetenv("STRATA_WORKERS");
    ASSERT_FALSE(bad);
    EXPECT_NE(std::string(bad.error().what()).find("STRATA_WORKERS=none"), std::string::npos);
}

// Blocks a task in read() on `fd` (as the monitor sees a task in I/O); returns once it started.
void spawn_blocked_reader(Runtime& sut, TaskGroup& group, int fd) {
    std::atomic<bool> started{false};
    sut.spawn(
        [&started, fd] {
            started = true;
            char byte = 0;
            EXPECT_EQ(::read(fd, &byte, 1), 1);
        },
        &group);
    while (!started.load()) std::this_thread::sleep_for(1ms);
}

// Two workers on one CPU: one blocked leaves the other ready, so no cover
// (the core is busy) and a task spawned meanwhile wakes the parked second
// worker; both blocked, the monitor's report brings a cover that runs the
// queued tasks, which unblock them.
TEST(RuntimeWorkers, a_core_of_two_workers_gets_a_cover_only_when_both_are_blocked) {
    test::FakeMonitor* monitor = nullptr;
    Options options;
    options.cpus = {sched_getcpu()};
    options.workers = 2;
    options.monitor = test::fake_monitor(&monitor);
    STRATA_ASSERT_ASSIGN(sut, Runtime::start(options));
    const int cpu = sut->cpus().front();
    monitor->set_ready(cpu, 2);
    int first[2];
    int second[2];
    ASSERT_EQ(::pipe(first), 0);
    ASSERT_EQ(::pipe(second), 0);
    TaskGroup group;
    std::this_thread::sleep_for(20ms);  // both workers run out of work and park
    spawn_blocked_reader(*sut, group, first[0]);
    monitor->set_ready(cpu, 1);
    std::this_thread::sleep_for(20ms);  // the leader scans every millisecond
    EXPECT_EQ(total(sut->stats(), &CoreStats::wakes), 0U);
    spawn_blocked_reader(*sut, group, second[0]);  // the second worker, woken for it
    sut->spawn([&] { EXPECT_EQ(::write(first[1], "x", 1), 1); }, &group);
    sut->spawn([&] { EXPECT_EQ(::write(second[1], "x", 1), 1); }, &group);
    monitor->set_ready(cpu, 0);
    sut->core_without_ready_worker(cpu);
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (total(sut->stats(), &CoreStats::wakes) == 0 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(100us);
    }
    monitor->set_ready(cpu, 1);
    sut->wait(group);
    monitor->set_ready(cpu, 2);
    for (int fd : {first[0], first[1], second[0], second[1]}) ::close(fd);
    const auto stats = sut->stats();
    EXPECT_EQ(total(stats, &CoreStats::wakes), 1U);
    EXPECT_EQ(total(stats, &CoreStats::workers), 3U);
}

TEST(RuntimePriority, prioritized_tasks_start_first_highest_first_then_in_spawn_order) {
    Options options;
    options.monitor = no_monitor();
    options.workers = 1;
    STRATA_ASSERT_ASSIGN(sut, Runtime::start(options));
    std::mutex mutex;
    std::vector<int> order;
    auto record = [&](int id) {
        return [&, id] {
            std::lock_guard lock(mutex);
            order.push_back(id);
        };
    };
    TaskGroup group;
    // Spawned from a task, so all wait until it ends.
    sut->spawn(
        [&] {
            sut->spawn(record(0), &group);
            sut->spawn_prioritized(record(51), 5, &group);
            sut->spawn_prioritized(record(1), 1, &group);
            sut->spawn(record(-1), &group);
            sut->spawn_prioritized(record(9), 9, &group);
            sut->spawn_prioritized(record(52), 5, &group);
            sut->spawn_prioritized(record(100), 0, &group);
        },
        &group);
    sut->wait(group);
    ASSERT_EQ(order.size(), 7U);
    EXPECT_EQ(std::vector<int>(order.begin(), order.begin() + 5), (std::vector<int>{9, 51, 52, 1, 100}));
    EXPECT_EQ(std::vector<int>(order.begin() + 5, order.end()), (std::vector<int>{-1, 0}));  // its deque: LIFO
}

TEST(RuntimePriority, stop_drops_queued_prioritized_tasks) {
    Options options;
    options.monitor = no_monitor();
    options.workers = 1;
    STRATA_ASSERT_ASSIGN(sut, Runtime::start(options));
    std::atomic<bool> started{false};
    std::atomic<bool> release{false};
    std::atomic<int> ran{0};
    sut->spawn([&] {
        started = true;
        while (!release.load()) std::this_thread::sleep_for(1ms);
    });
    // The one worker runs the blocker before anything is queued (else the prioritized tasks go first).
    while (!started.load()) std::this_thread::sleep_for(1ms);
    for (int i = 0; i < 10; ++i) sut->spawn_prioritized([&] { ran.fetch_add(1); }, 1);
    // The blocker ends once stop() has begun: stop() sets its flag first, well within 500 ms even
    // under TSan beside busy loops (a proof run failed with 20 ms).
    std::thread releaser([&] {
        std::this_thread::sleep_for(500ms);
        release = true;
    });
    sut->stop();
    releaser.join();
    EXPECT_EQ(ran.load(), 0);  // the worker stops after its running task; queued ones are dropped (and freed)
}

}  // namespace
}  // namespace strata::runtime
