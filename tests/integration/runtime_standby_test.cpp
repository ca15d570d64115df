// SPDX-License-Identifier: MIT
// Cover priority idle+standby (include/strata/runtime.hpp, issue 15), with
// the real BPF monitor on one CPU: a worker that would park while another of
// its core is active stands by instead, runnable at SCHED_IDLE and out of the
// monitor's count. When the core's last ready worker blocks, the standby
// worker takes over without the monitor's thread; it is not counted as
// ready while it stands by; and it stops spinning once its core has no
// active worker left.
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "runtime_cover_support.hpp"
#include "strata/runtime.hpp"
#include "support/capability.hpp"

namespace strata::runtime {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

int first_allowed_cpu() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (::sched_getaffinity(0, sizeof(set), &set) != 0) return -1;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (CPU_ISSET(static_cast<unsigned>(cpu), &set)) return cpu;
    }
    return -1;
}

std::unique_ptr<Runtime> start(int cpu, CoverPriority priority) {
    return test::start_with_ebpf(cpu, priority);
}

void spin_for(std::chrono::microseconds d) {
    const auto until = Clock::now() + d;
    while (Clock::now() < until) {
    }
}

// CPU time (ns) of this process's worker threads ("strata-w*"), from schedstat.
std::uint64_t workers_cpu_ns() {
    std::uint64_t total = 0;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
        std::ifstream comm(entry.path() / "comm");
        std::string name;
        std::getline(comm, name);
        if (name.rfind("strata-w", 0) != 0) continue;
        std::ifstream stat(entry.path() / "schedstat");
        std::uint64_t ns = 0;
        stat >> ns;
        total += ns;
    }
    return total;
}

// Tasks that compute, then block for `block` (a sleep is a block to the
// monitor), as the UMT benchmark's synthetic tasks with their device.
void spawn_blocking_tasks(Runtime& rt, TaskGroup& group, std::atomic<int>& done, int tasks,
                          std::chrono::microseconds compute, std::chrono::microseconds block) {
    for (int i = 0; i < tasks; ++i) {
        rt.spawn(
            [&done, compute, block] {
                spin_for(compute);
                std::this_thread::sleep_for(block);
                done.fetch_add(1);
            },
            &group);
    }
}

// Starts a runtime on `cpu` with `priority` and runs `tasks` blocking tasks
// (compute, then 1 ms blocked) to the end; null (a test failure) if it
// cannot start.
std::unique_ptr<Runtime> run_blocking_tasks(int cpu, CoverPriority priority, int tasks,
                                            std::chrono::microseconds compute) {
    auto sut = start(cpu, priority);
    if (sut == nullptr) return nullptr;
    EXPECT_EQ(sut->cover_priority(), priority) << sut->cover_reason();
    std::atomic<int> done{0};
    TaskGroup group;
    spawn_blocking_tasks(*sut, group, done, tasks, compute, 1000us);
    sut->wait(group);
    EXPECT_EQ(done.load(), tasks);
    return sut;
}

TEST(RuntimeStandby, a_standby_worker_takes_over_the_cores_of_blocked_workers_without_the_monitors_thread) {
    STRATA_REQUIRE(test::is_root(), "root, for the BPF monitor and to take a thread back from SCHED_IDLE");
    const int cpu = first_allowed_cpu();
    constexpr int kTasks = 200;
    auto sut = run_blocking_tasks(cpu, CoverPriority::idle_standby, kTasks, 300us);
    ASSERT_NE(sut, nullptr);
    const auto stats = sut->stats()[0];
    std::printf("idle+standby: %llu blocks, %llu takeovers, %llu wakes by the monitor or the leader\n",
                static_cast<unsigned long long>(stats.monitor.blocks),
                static_cast<unsigned long long>(stats.standby_takeovers), static_cast<unsigned long long>(stats.wakes));
    EXPECT_GE(stats.monitor.blocks, static_cast<std::uint64_t>(kTasks)) << "every task blocked";
    // Once a standby worker exists, a core emptied by a block is taken over by
    // it; the monitor's thread (or the leader) wakes a parked worker only
    // where none stood by: the first blocks, and blocks of a standby worker
    // that had just taken over. How often the core empties at all depends on
    // how many workers the first wakes left in circulation, so the check is
    // on who handled the emptied cores, not on their number.
    EXPECT_GE(stats.standby_takeovers, 10U) << "the standby worker took over";
    EXPECT_GE(stats.standby_takeovers, 3 * stats.wakes) << "emptied cores handled by the monitor's thread instead";
}

// The control: with idle alone every emptied core waits for the monitor's thread.
TEST(RuntimeStandby, with_idle_alone_no_worker_stands_by) {
    STRATA_REQUIRE(test::is_root(), "root, for the BPF monitor and to take a thread back from SCHED_IDLE");
    const int cpu = first_allowed_cpu();
    constexpr int kTasks = 100;
    auto sut = run_blocking_tasks(cpu, CoverPriority::idle, kTasks, 300us);
    ASSERT_NE(sut, nullptr);
    const auto stats = sut->stats()[0];
    EXPECT_EQ(stats.standby_takeovers, 0U);
    EXPECT_GE(stats.wakes, 10U) << "the monitor's thread woke the covers";
}

// A standby worker spins beside the core's computing worker, at SCHED_IDLE
// and out of the count: the monitor sees one ready worker, not two.
TEST(RuntimeStandby, a_standby_worker_is_not_counted_as_ready_beside_a_computing_worker) {
    STRATA_REQUIRE(test::is_root(), "root, for the BPF monitor and to take a thread back from SCHED_IDLE");
    const int cpu = first_allowed_cpu();
    auto sut = start(cpu, CoverPriority::idle_standby);
    ASSERT_NE(sut, nullptr);
    // Make a standby worker: a task blocks, a cover is woken for it, the
    // cover finds no task and stands by while the blocked one is active.
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    std::atomic<bool> computed{false};
    std::chrono::nanoseconds oversubscribed_before{0};
    TaskGroup group;
    sut->spawn(
        [&] {
            char byte = 0;
            EXPECT_EQ(::read(fds[0], &byte, 1), 1);
            oversubscribed_before = sut->stats()[0].monitor.oversubscribed_time;
            spin_for(60ms);  // the standby worker spins beside this
            computed = true;
        },
        &group);
    std::this_thread::sleep_for(50ms);  // blocked; the woken cover found nothing and stands by
    ASSERT_EQ(::write(fds[1], "x", 1), 1);
    sut->wait(group);
    const auto stats = sut->stats()[0];
    const auto oversubscribed = stats.monitor.oversubscribed_time - oversubscribed_before;
    std::printf("idle+standby beside a computing worker: %.2f ms oversubscribed of 60 ms, %llu workers\n",
                std::chrono::duration<double, std::milli>(oversubscribed).count(),
                static_cast<unsigned long long>(stats.workers));
    EXPECT_TRUE(computed.load());
    EXPECT_GE(stats.workers, 2U) << "a second worker was woken to cover, then stood by";
    EXPECT_LT(oversubscribed, 10ms) << "the standby worker counted as ready";
    ::close(fds[0]);
    ::close(fds[1]);
}

// Once the work is done no worker is active, and the standby worker stops
// spinning: the workers take no CPU time while the runtime is idle.
TEST(RuntimeStandby, no_worker_spins_once_the_runtime_is_idle) {
    STRATA_REQUIRE(test::is_root(), "root, for the BPF monitor and to take a thread back from SCHED_IDLE");
    const int cpu = first_allowed_cpu();
    auto sut = run_blocking_tasks(cpu, CoverPriority::idle_standby, 50, 200us);
    ASSERT_NE(sut, nullptr);
    std::this_thread::sleep_for(50ms);  // the last workers park
    const auto before = workers_cpu_ns();
    std::this_thread::sleep_for(200ms);
    const auto spent = std::chrono::nanoseconds(workers_cpu_ns() - before);
    std::printf("idle+standby, idle runtime: workers took %.3f ms of CPU in 200 ms (%llu takeovers)\n",
                std::chrono::duration<double, std::milli>(spent).count(),
                static_cast<unsigned long long>(sut->stats()[0].standby_takeovers));
    EXPECT_GT(sut->stats()[0].standby_takeovers, 0U) << "a worker stood by during the run";
    EXPECT_LT(spent, 10ms) << "a worker kept spinning with nothing to cover";
}

// No task lost or stuck: tasks that block, compute and wait for each
// other's results (a standby worker may have to wake the holder of a
// surrendered task), many rounds.
TEST(RuntimeStandby, blocking_and_dependent_tasks_all_complete) {
    STRATA_REQUIRE(test::is_root(), "root, for the BPF monitor and to take a thread back from SCHED_IDLE");
    const int cpu = first_allowed_cpu();
    auto sut = start(cpu, CoverPriority::idle_standby);
    ASSERT_NE(sut, nullptr);
    constexpr int kOuter = 40;
    const auto run = test::run_dependent_tasks(*sut, kOuter);
    EXPECT_EQ(run.done, kOuter);
    EXPECT_EQ(run.sum, kOuter * (0 + 1 + 2 + 3));
    std::printf("idle+standby dependent tasks: %.1f ms, %llu takeovers\n",
                std::chrono::duration<double, std::milli>(run.took).count(),
                static_cast<unsigned long long>(sut->stats()[0].standby_takeovers));
    EXPECT_LT(run.took, 10s) << "no task stuck";
}

}  // namespace
}  // namespace strata::runtime
