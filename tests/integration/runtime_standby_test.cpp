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

std::unique_ptr<Runtime> start(int cpu, CoverPriority priority,
                               std::chrono::microseconds leader_period = Options{}.leader_period) {
    return test::start_with_ebpf(cpu, priority, leader_period);
}

void spin_for(std::chrono::microseconds d) {
    const auto until = Clock::now() + d;
    while (Clock::now() < until) {
    }
}

using test::worker_tids;

// CPU time (ns) of this process's worker threads, from schedstat.
std::uint64_t workers_cpu_ns() {
    std::uint64_t total = 0;
    for (const pid_t tid : worker_tids()) {
        std::ifstream stat("/proc/self/task/" + std::to_string(tid) + "/schedstat");
        std::uint64_t ns = 0;
        stat >> ns;
        total += ns;
    }
    return total;
}

// A worker stands by: runnable at SCHED_IDLE while the monitor counts no
// ready worker on the core (it is left out of the count) for a whole
// millisecond of the monitor's no-ready time.
bool standing_by(Runtime& rt) {
    bool idle_and_runnable = false;
    for (const pid_t tid : worker_tids()) {
        idle_and_runnable |= test::policy_of(tid) == SCHED_IDLE && test::thread_state(tid) == 'R';
    }
    if (!idle_and_runnable) return false;
    const auto before = rt.stats()[0].monitor.no_ready_time;
    std::this_thread::sleep_for(1ms);
    return rt.stats()[0].monitor.no_ready_time - before >= 1ms;
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
                                            std::chrono::microseconds compute,
                                            std::chrono::microseconds leader_period = Options{}.leader_period) {
    auto sut = start(cpu, priority, leader_period);
    if (sut == nullptr) return nullptr;
    EXPECT_EQ(sut->cover_priority(), priority) << sut->cover_reason();
    std::atomic<int> done{0};
    TaskGroup group;
    spawn_blocking_tasks(*sut, group, done, tasks, compute, 1000us);
    sut->wait(group);
    EXPECT_EQ(done.load(), tasks);
    return sut;
}

// What happened in run_standby_takeover().
struct Takeover {
    bool stood_by = false;        // a worker stood by beside the blocked one
    pid_t standby = 0;            // that worker
    pid_t ran_probe = 0;          // the worker that ran the task spawned then
    std::uint64_t takeovers = 0;  // standby takeovers meanwhile
    std::uint64_t wakes = 0;      // wakes by the monitor's thread (or the leader) meanwhile
};

// A task blocks in read(); the cover woken for it runs the task queued
// behind it, finds nothing more and stands by. Then a task is spawned: the
// core has no ready worker and no event comes (a standby worker is set), so
// only the standby worker can take it. Run with the leader's scan out of the
// way (a period longer than the test): it would also act for a standby worker
// that did not get its CPU for a period, as happens on a loaded machine.
Takeover run_standby_takeover(Runtime& rt) {
    Takeover t;
    int fds[2];
    EXPECT_EQ(::pipe(fds), 0);
    std::atomic<bool> go{false};
    std::atomic<pid_t> blocked{0}, ran_probe{0};
    TaskGroup group;
    rt.spawn(
        [&] {
            char byte = 0;
            blocked = static_cast<pid_t>(::gettid());
            while (!go.load()) {
            }
            EXPECT_EQ(::read(fds[0], &byte, 1), 1);
        },
        &group);
    EXPECT_TRUE(test::wait_for([&] { return blocked.load() != 0; })) << "the first task never started";
    rt.spawn([] {}, &group);  // queued behind it: the monitor's event wakes a cover for the block
    go = true;
    t.stood_by = test::wait_for([&] { return standing_by(rt); });
    // The standby worker is the runnable one at SCHED_IDLE: a worker that
    // covered and then parked can still be at SCHED_IDLE, asleep.
    for (const pid_t tid : worker_tids()) {
        if (tid != blocked.load() && test::policy_of(tid) == SCHED_IDLE && test::thread_state(tid) == 'R') {
            t.standby = tid;
        }
    }
    const auto before = rt.stats()[0];
    TaskGroup probe;
    rt.spawn([&] { ran_probe = static_cast<pid_t>(::gettid()); }, &probe);
    (void)test::wait_for([&] { return ran_probe.load() != 0; });
    const auto after = rt.stats()[0];
    t.ran_probe = ran_probe.load();
    t.takeovers = after.standby_takeovers - before.standby_takeovers;
    t.wakes = after.wakes - before.wakes;
    EXPECT_EQ(::write(fds[1], "x", 1), 1);  // the blocked worker runs the task, if nobody did
    rt.wait(group);
    rt.wait(probe);
    ::close(fds[0]);
    ::close(fds[1]);
    return t;
}

TEST(RuntimeStandby, a_standby_worker_takes_over_the_core_of_a_blocked_worker_without_the_monitors_thread) {
    STRATA_REQUIRE(test::is_root(), "root, for the BPF monitor and to take a thread back from SCHED_IDLE");
    auto sut = start(first_allowed_cpu(), CoverPriority::idle_standby, 60s);
    ASSERT_NE(sut, nullptr);
    ASSERT_EQ(sut->cover_priority(), CoverPriority::idle_standby) << sut->cover_reason();
    const Takeover t = run_standby_takeover(*sut);
    std::printf("idle+standby: standby worker %d, the new task ran on %d, %llu takeovers, %llu wakes\n", t.standby,
                t.ran_probe, static_cast<unsigned long long>(t.takeovers), static_cast<unsigned long long>(t.wakes));
    ASSERT_TRUE(t.stood_by) << "no worker stood by beside the blocked one";
    EXPECT_EQ(t.ran_probe, t.standby) << "the task ran on another worker than the standby one";
    EXPECT_EQ(t.takeovers, 1U) << "the standby worker took over";
    EXPECT_EQ(t.wakes, 0U) << "a worker was woken for the core instead";
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
    // Make a standby worker: a task blocks, the cover woken for it runs the
    // task queued behind it, finds no more and stands by while the blocked
    // one is active.
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    std::atomic<bool> started{false}, go{false}, computed{false};
    std::chrono::nanoseconds oversubscribed_before{0};
    Clock::duration computing{};
    TaskGroup group;
    sut->spawn(
        [&] {
            char byte = 0;
            started = true;
            while (!go.load()) {
            }
            EXPECT_EQ(::read(fds[0], &byte, 1), 1);
            oversubscribed_before = sut->stats()[0].monitor.oversubscribed_time;
            const auto from = Clock::now();
            spin_for(60ms);  // the standby worker spins beside this
            computing = Clock::now() - from;
            computed = true;
        },
        &group);
    EXPECT_TRUE(test::wait_for([&] { return started.load(); })) << "the first task never started";
    sut->spawn([] {}, &group);  // queued: the monitor's event wakes a cover for the block
    go = true;
    ASSERT_TRUE(test::wait_for([&] { return standing_by(*sut); })) << "no worker stood by";
    ASSERT_EQ(::write(fds[1], "x", 1), 1);
    sut->wait(group);
    const auto stats = sut->stats()[0];
    const auto oversubscribed = stats.monitor.oversubscribed_time - oversubscribed_before;
    std::printf("idle+standby beside a computing worker: %.2f ms oversubscribed of %.2f ms, %llu workers\n",
                std::chrono::duration<double, std::milli>(oversubscribed).count(),
                std::chrono::duration<double, std::milli>(computing).count(),
                static_cast<unsigned long long>(stats.workers));
    EXPECT_TRUE(computed.load());
    EXPECT_GE(stats.workers, 2U) << "a second worker was woken to cover, then stood by";
    // Counted as ready, the standby worker would make the whole computation oversubscribed.
    EXPECT_LT(oversubscribed, computing / 2) << "the standby worker counted as ready";
    ::close(fds[0]);
    ::close(fds[1]);
}

// Once the work is done no worker is active, and the standby worker stops
// spinning: the workers take no CPU time while the runtime is idle.
TEST(RuntimeStandby, no_worker_spins_once_the_runtime_is_idle) {
    STRATA_REQUIRE(test::is_root(), "root, for the BPF monitor and to take a thread back from SCHED_IDLE");
    const int cpu = first_allowed_cpu();
    auto sut = run_blocking_tasks(cpu, CoverPriority::idle_standby, 50, 200us, 60s);
    ASSERT_NE(sut, nullptr);
    // And one worker that stood by and took over for certain.
    const bool stood_by = run_standby_takeover(*sut).stood_by;
    EXPECT_TRUE(stood_by) << "no worker stood by";
    // The last workers park; one that keeps spinning never sleeps, and the
    // CPU time below shows it.
    (void)test::wait_for(test::all_workers_asleep);
    const auto before = workers_cpu_ns();
    std::this_thread::sleep_for(200ms);
    // CPU time, not wall time: load on the machine does not add to it.
    const auto spent = std::chrono::nanoseconds(workers_cpu_ns() - before);
    std::printf("idle+standby, idle runtime: workers took %.3f ms of CPU in 200 ms (%llu takeovers)\n",
                std::chrono::duration<double, std::milli>(spent).count(),
                static_cast<unsigned long long>(sut->stats()[0].standby_takeovers));
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
    // A hang bound: well under a second on a quiet machine, over 10 s at load 22.
    EXPECT_LT(run.took, 60s) << "no task stuck";
}

}  // namespace
}  // namespace strata::runtime
