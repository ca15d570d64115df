// SPDX-License-Identifier: MIT
// Shared by the runtime's cover-priority tests with the real BPF monitor
// (runtime_monitor_test.cpp, runtime_surrender_test.cpp,
// runtime_suspend_test.cpp, runtime_standby_test.cpp).
//
// These tests wait for events (a thread asleep in read(), a loop advancing,
// a policy changed) with a generous hang bound instead of sleeping for a
// guessed time, and measure a computation in the computing thread's own CPU
// time, which load on the machine does not advance.
#pragma once

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "strata/runtime.hpp"
#include "support/process.hpp"

namespace strata::test {

/// Hang bound for a wait on another thread: far beyond any delay load causes.
/// Covers and standby workers run at SCHED_IDLE, pinned to one CPU: beside
/// normal-priority work there (weight 3 against 1024 each) they get a slice
/// every few seconds, and a step such as "a cover runs the queued task, then
/// stands by" needs several; 10 s was missed once while other tests loaded
/// a 2-core machine (fresh-machine proof at 9866272). Only a failing wait
/// lasts this long.
inline constexpr std::chrono::seconds kHang{30};

/// Sleeps in small steps until `predicate` holds; false after kHang.
template <class Predicate>
bool wait_for(Predicate predicate) {
    const auto deadline = std::chrono::steady_clock::now() + kHang;
    while (!predicate()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    return true;
}

inline std::vector<int> allowed_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    std::vector<int> cpus;
    if (::sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (CPU_ISSET(static_cast<unsigned>(cpu), &set)) cpus.push_back(cpu);
    }
    return cpus;
}

/// The one-letter state of thread `tid` of this process ('R', 'S', ...).
inline char thread_state(pid_t tid) {
    return proc_state("/proc/self/task/" + std::to_string(tid) + "/stat");
}

/// CPU time the calling thread has run: not advanced while it waits for a core.
inline std::chrono::nanoseconds thread_cpu_time() {
    timespec ts{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

/// Policy of thread `tid` (0: the caller) without the reset-on-fork flag.
inline int policy_of(pid_t tid) {
    return ::sched_getscheduler(tid) & ~SCHED_RESET_ON_FORK;
}

/// Thread ids of this process's worker threads ("strata-w*").
inline std::vector<pid_t> worker_tids() {
    std::vector<pid_t> tids;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
        std::ifstream comm(entry.path() / "comm");
        std::string name;
        std::getline(comm, name);
        if (name.rfind("strata-w", 0) == 0) tids.push_back(static_cast<pid_t>(std::stol(entry.path().filename())));
    }
    return tids;
}

/// Every worker thread sleeps (parked, or blocked in a task).
inline bool all_workers_asleep() {
    for (const pid_t tid : worker_tids()) {
        if (thread_state(tid) != 'S') return false;
    }
    return true;
}

/// The runtime's only worker, once it has named itself and parked (0 if
/// there is not exactly one).
inline pid_t only_worker_once_parked() {
    if (!wait_for([] { return worker_tids().size() == 1 && all_workers_asleep(); })) return 0;
    const auto tids = worker_tids();
    return tids.size() == 1 ? tids.front() : 0;
}

/// The set-up the cover tests need, checked before the wakeup: the first task
/// runs on the runtime's first worker, blocked, and exactly one more worker
/// exists, woken to cover for it and running the second task. Under load a
/// worker may also block for a moment inside the runtime (a contended lock),
/// the runtime wakes a cover for that block too, and the tasks may then run
/// on other workers than these: a different scenario, which the tests count
/// and set up again.
inline bool one_blocked_worker_and_its_cover(runtime::Runtime& rt, pid_t first_worker, pid_t blocked, pid_t cover) {
    return first_worker != 0 && blocked == first_worker && cover != first_worker && rt.stats()[0].workers == 2;
}

/// Writes one byte to `fd` from a thread bound to `cpu`, and joins it.
inline void write_from(int cpu, int fd) {
    std::thread waker([&] {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(static_cast<unsigned>(cpu), &set);
        EXPECT_EQ(::pthread_setaffinity_np(::pthread_self(), sizeof(set), &set), 0);
        EXPECT_EQ(::write(fd, "x", 1), 1);
    });
    waker.join();
}

/// A runtime on `cpu` alone with the ebpf monitor, cover priority `priority`
/// and the leader's scan every `leader_period`; null (and a test failure)
/// when it cannot start.
inline std::unique_ptr<runtime::Runtime> start_with_ebpf(
    int cpu, runtime::CoverPriority priority,
    std::chrono::microseconds leader_period = runtime::Options{}.leader_period) {
    ::setenv("STRATA_MONITOR", "ebpf", 1);
    runtime::Options options;
    options.cpus = {cpu};
    options.leader_period = leader_period;
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
