// SPDX-License-Identifier: MIT
// Cover priority idle+suspend (docs/runtime.md, issue 15), with the real BPF
// monitor: a worker blocks in read(); a second task's worker covers for it,
// computing; the first is woken (from another CPU) and computes 20 ms without
// a scheduling point. The cover must be suspended — sleeping, not runnable —
// during that time, continue once the woken worker blocks again (a second
// read), and finish its task. Without the mechanism the cover stays runnable
// beside the woken worker (SCHED_IDLE) and the state checks fail.
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
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

std::vector<int> allowed_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    std::vector<int> cpus;
    if (::sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (CPU_ISSET(static_cast<unsigned>(cpu), &set)) cpus.push_back(cpu);
    }
    return cpus;
}

// The one-letter state of thread `tid` of this process ('R', 'S', ...).
char thread_state(pid_t tid) {
    std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto paren = text.rfind(')');
    return paren == std::string::npos || paren + 2 >= text.size() ? '?' : text[paren + 2];
}

void write_from(int cpu, int fd) {
    std::thread waker([&] {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(static_cast<unsigned>(cpu), &set);
        EXPECT_EQ(::pthread_setaffinity_np(::pthread_self(), sizeof(set), &set), 0);
        EXPECT_EQ(::write(fd, "x", 1), 1);
    });
    waker.join();
}

struct Round {
    int sleeping_samples = 0;  // the cover's state sampled by the woken worker while it computes
    int samples = 0;
    std::uint64_t progress_while_woken = 0;  // the cover's loop iterations during those 20 ms
    bool cover_ran_after = false;            // progress while the woken worker was blocked again
    bool cover_finished = false;
    int cover_policy_after = -1;  // once resumed: not left at SCHED_FIFO by the raise
};

std::unique_ptr<Runtime> start(int cpu, CoverPriority priority) {
    return test::start_with_ebpf(cpu, priority);
}

Round run_round(Runtime& sut, int waker_cpu) {
    Round r;
    int first[2], second[2];
    EXPECT_EQ(::pipe(first), 0);
    EXPECT_EQ(::pipe(second), 0);
    std::atomic<bool> blocked{false}, covering{false}, woken_done{false}, blocked_again{false}, cover_stop{false};
    std::atomic<pid_t> cover_tid{0};
    std::atomic<std::uint64_t> progress{0};
    TaskGroup group;
    sut.spawn(
        [&] {
            char byte = 0;
            blocked = true;
            EXPECT_EQ(::read(first[0], &byte, 1), 1);
            const auto p0 = progress.load();
            const auto until = Clock::now() + 20ms;  // computes, no scheduling point
            auto next_sample = Clock::now() + 2ms;   // after the signal had time to land
            while (Clock::now() < until) {
                if (Clock::now() >= next_sample) {
                    ++r.samples;
                    r.sleeping_samples += thread_state(cover_tid.load()) == 'S' ? 1 : 0;
                    next_sample += 2ms;
                }
            }
            r.progress_while_woken = progress.load() - p0;
            blocked_again = true;
            EXPECT_EQ(::read(second[0], &byte, 1), 1);  // blocks again: the cover continues
            woken_done = true;
        },
        &group);
    while (!blocked.load()) std::this_thread::sleep_for(50us);
    std::this_thread::sleep_for(2ms);  // in read() by now
    sut.spawn(
        [&] {
            cover_tid = static_cast<pid_t>(::gettid());
            covering = true;
            const auto deadline = Clock::now() + 5s;
            while (!cover_stop.load() && Clock::now() < deadline) {
                progress.fetch_add(1, std::memory_order_relaxed);
            }
            r.cover_finished = true;
        },
        &group);
    while (!covering.load()) std::this_thread::sleep_for(50us);
    std::this_thread::sleep_for(3ms);  // the cover computes
    write_from(waker_cpu, first[1]);
    while (!blocked_again.load()) std::this_thread::sleep_for(100us);
    std::this_thread::sleep_for(5ms);  // the woken worker is in its second read
    const auto p1 = progress.load();
    std::this_thread::sleep_for(10ms);
    r.cover_ran_after = progress.load() > p1;
    r.cover_policy_after = ::sched_getscheduler(cover_tid.load()) & ~SCHED_RESET_ON_FORK;
    cover_stop = true;
    std::this_thread::sleep_for(2ms);
    write_from(waker_cpu, second[1]);
    sut.wait(group);
    EXPECT_TRUE(woken_done.load());
    for (int fd : {first[0], first[1], second[0], second[1]}) ::close(fd);
    return r;
}

TEST(RuntimeCoverSuspend, a_woken_covered_worker_suspends_its_cover_until_it_blocks_again) {
    STRATA_REQUIRE(test::is_root(), "root, for the BPF monitor and to take a thread back from SCHED_IDLE");
    const auto cpus = allowed_cpus();
    STRATA_REQUIRE(cpus.size() >= 2, "two CPUs: the waker runs on another CPU than the workers");
    constexpr int rounds = 10;
    int suspended = 0, resumed = 0, finished = 0, restored = 0;
    std::uint64_t suspends = 0, timeouts = 0, requests = 0;
    int timed = 0;  // rounds whose suspended-time statistics cover the woken worker's 20 ms
    std::chrono::nanoseconds latency_max{0};
    std::string misses;
    for (int i = 0; i < rounds; ++i) {
        auto sut = start(cpus[0], CoverPriority::idle_suspend);
        ASSERT_NE(sut, nullptr);
        ASSERT_EQ(sut->cover_priority(), CoverPriority::idle_suspend) << sut->cover_reason();
        const Round r = run_round(*sut, cpus[1]);
        const auto stats = sut->stats()[0];
        suspends += stats.suspends;
        timeouts += stats.suspend_timeouts;
        requests += stats.suspend_requests;
        latency_max = std::max(latency_max, stats.suspend_latency_max);
        // The woken worker computes 20 ms, sampled from 2 ms on: the cover slept most of it, less than the bound.
        timed += stats.suspended_max >= 15ms && stats.suspended_max < 100ms &&
                         stats.suspended_time >= stats.suspended_max && stats.suspend_latency <= stats.suspended_time
                     ? 1
                     : 0;
        // Sleeping in every sample after the first (the signal lands within microseconds).
        const bool ok = r.samples >= 5 && r.sleeping_samples >= r.samples - 1;
        suspended += ok ? 1 : 0;
        resumed += r.cover_ran_after ? 1 : 0;
        finished += r.cover_finished ? 1 : 0;
        restored += r.cover_policy_after == SCHED_IDLE || r.cover_policy_after == SCHED_OTHER ? 1 : 0;
        if (!ok || !r.cover_ran_after) {
            misses += "; round " + std::to_string(i) + ": cover sleeping in " + std::to_string(r.sleeping_samples) +
                      "/" + std::to_string(r.samples) + " samples, progress while woken " +
                      std::to_string(r.progress_while_woken) + ", ran after " + std::to_string(r.cover_ran_after);
        }
    }
    std::printf(
        "idle+suspend: %d/%d rounds suspended, %d resumed, %llu requests, %llu suspends, %llu bounded, %d timed, "
        "longest signal latency %.1f us\n",
        suspended, rounds, resumed, static_cast<unsigned long long>(requests),
        static_cast<unsigned long long>(suspends), static_cast<unsigned long long>(timeouts), timed,
        std::chrono::duration<double, std::micro>(latency_max).count());
    EXPECT_EQ(finished, rounds) << "every cover finished its task";
    EXPECT_EQ(restored, rounds) << "the resumed cover is back at SCHED_IDLE or normal, not SCHED_FIFO";
    EXPECT_GE(suspended, rounds - 1) << "the cover slept while the woken worker computed" << misses;
    EXPECT_GE(resumed, rounds - 1) << "the cover ran again once the woken worker blocked" << misses;
    EXPECT_EQ(timeouts, 0U) << "a suspension ended by its bound, not by the block";
    EXPECT_GE(requests, suspends) << "every suspension was requested by a signal";
    EXPECT_GE(timed, rounds - 1) << "the suspended time (longest, sum) covers the woken worker's computation";
    EXPECT_GT(latency_max.count(), 0) << "the signal's latency is measured";
    EXPECT_LT(latency_max, 20ms) << "the signal lands before the woken worker's computation ends";
}

// The control: with idle alone the cover stays runnable beside the woken
// worker, so the state check above can fail.
TEST(RuntimeCoverSuspend, with_idle_alone_the_cover_stays_runnable_beside_the_woken_worker) {
    STRATA_REQUIRE(test::is_root(), "root, for the BPF monitor and to take a thread back from SCHED_IDLE");
    const auto cpus = allowed_cpus();
    STRATA_REQUIRE(cpus.size() >= 2, "two CPUs: the waker runs on another CPU than the workers");
    auto sut = start(cpus[0], CoverPriority::idle);
    ASSERT_NE(sut, nullptr);
    const Round r = run_round(*sut, cpus[1]);
    EXPECT_GE(r.samples, 5);
    EXPECT_EQ(r.sleeping_samples, 0) << "without suspension the cover is runnable ('R')";
    EXPECT_TRUE(r.cover_finished);
}

// The hand-back: the woken worker reaches a scheduling point (yield() after
// its I/O) while its cover is suspended. The cover continues at once and the
// woken worker surrenders, as with idle; held until the woken worker blocked
// again, the cover would make no progress while the woken worker computes on.
TEST(RuntimeCoverSuspend, a_woken_worker_at_a_scheduling_point_hands_the_core_back_to_its_cover) {
    STRATA_REQUIRE(test::is_root(), "root, for the BPF monitor and to take a thread back from SCHED_IDLE");
    const auto cpus = allowed_cpus();
    STRATA_REQUIRE(cpus.size() >= 2, "two CPUs: the waker runs on another CPU than the workers");
    constexpr int rounds = 5;
    int handed = 0;
    std::uint64_t handbacks = 0;
    for (int i = 0; i < rounds; ++i) {
        auto sut = start(cpus[0], CoverPriority::idle_suspend);
        ASSERT_NE(sut, nullptr);
        Runtime& rt = *sut;
        int fds[2];
        ASSERT_EQ(::pipe(fds), 0);
        std::atomic<bool> blocked{false}, covering{false}, yielded{false}, stop{false};
        std::atomic<std::uint64_t> progress{0};
        TaskGroup group;
        rt.spawn(
            [&] {
                char byte = 0;
                blocked = true;
                EXPECT_EQ(::read(fds[0], &byte, 1), 1);
                const auto until = Clock::now() + 3ms;  // computes: the cover is suspended
                while (Clock::now() < until) {
                }
                yielded = true;
                rt.yield();  // the scheduling point after its I/O
                const auto more = Clock::now() + 20ms;
                while (Clock::now() < more) {
                }
            },
            &group);
        while (!blocked.load()) std::this_thread::sleep_for(50us);
        std::this_thread::sleep_for(2ms);
        rt.spawn(
            [&] {
                covering = true;
                const auto deadline = Clock::now() + 5s;
                while (!stop.load() && Clock::now() < deadline) progress.fetch_add(1, std::memory_order_relaxed);
            },
            &group);
        while (!covering.load()) std::this_thread::sleep_for(50us);
        std::this_thread::sleep_for(2ms);
        write_from(cpus[1], fds[1]);
        while (!yielded.load()) std::this_thread::sleep_for(50us);
        std::this_thread::sleep_for(1ms);
        const auto p0 = progress.load();
        std::this_thread::sleep_for(8ms);  // within the woken worker's 20 ms after its yield()
        handed += progress.load() > p0 ? 1 : 0;
        stop = true;
        rt.wait(group);
        handbacks += rt.stats()[0].suspend_handbacks;
        ::close(fds[0]);
        ::close(fds[1]);
    }
    std::printf("idle+suspend hand-back: the cover ran on in %d/%d rounds, %llu hand-backs\n", handed, rounds,
                static_cast<unsigned long long>(handbacks));
    EXPECT_GE(handed, rounds - 1) << "the cover continued after the woken worker's scheduling point";
    EXPECT_GE(handbacks, static_cast<std::uint64_t>(rounds - 1)) << "the release came from the scheduling point";
}

// No task lost or stuck: tasks that block, compute and wait for each other's
// results (the woken worker may need the suspended cover's task), many rounds.
TEST(RuntimeCoverSuspend, blocking_and_dependent_tasks_all_complete) {
    STRATA_REQUIRE(test::is_root(), "root, for the BPF monitor and to take a thread back from SCHED_IDLE");
    const auto cpus = allowed_cpus();
    auto sut = start(cpus[0], CoverPriority::idle_suspend);
    ASSERT_NE(sut, nullptr);
    ASSERT_EQ(sut->cover_priority(), CoverPriority::idle_suspend) << sut->cover_reason();
    Runtime& rt = *sut;
    constexpr int kOuter = 40;
    const auto run = test::run_dependent_tasks(rt, kOuter);
    const auto took = run.took;
    EXPECT_EQ(run.done, kOuter);
    EXPECT_EQ(run.sum, kOuter * (0 + 1 + 2 + 3));
    const auto stats = rt.stats()[0];
    std::printf("idle+suspend dependent tasks: %.1f ms, %llu suspends, %llu bounded\n",
                std::chrono::duration<double, std::milli>(took).count(),
                static_cast<unsigned long long>(stats.suspends),
                static_cast<unsigned long long>(stats.suspend_timeouts));
    EXPECT_LT(took, 10s) << "no task stuck";
    sut->stop();  // stopping releases any suspension: returns
}

}  // namespace
}  // namespace strata::runtime
