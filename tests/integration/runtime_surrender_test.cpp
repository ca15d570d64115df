// SPDX-License-Identifier: MIT
// Cover priority surrender (docs/runtime.md): a cover keeps the normal policy
// while it covers; when the worker it covers for is woken — here from
// another CPU, the case SCHED_IDLE alone did not always handle — the
// monitor's wakeup event makes the runtime lower the cover to SCHED_IDLE at
// nice 19, which reschedules its CPU, so the woken worker runs; the cover is
// back to normal, at its old nice, once alone. The woken worker computes
// after its read before a scheduling point, so the core holds two ready
// workers until the cover gives way.
//
// Asserted as events, not times: the woken worker itself finds its cover
// lowered before it has spent its computation (20 ms of its own CPU time,
// which load on the machine does not advance), and the cover finds itself
// normal again once the woken worker surrendered. The wake-to-run latency
// is printed; bench/umt measures what the mode is worth.
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
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
using test::policy_of;
using test::thread_cpu_time;
using test::thread_state;
using test::wait_for;

// The woken worker's computation after its read, in its own CPU time.
constexpr auto kComputeCpu = 20ms;

struct SurrenderRound {
    int policy_while_covering = -1;
    bool lowered_seen = false;  // the woken worker found its cover at SCHED_IDLE within its computation
    std::chrono::nanoseconds cpu_until_lowered{};  // the woken worker's own CPU time until then
    bool restored = false;                         // the cover found itself normal at the old nice again
    int policy_after = -1;
    int nice_after = -100;
    std::uint64_t kicks = 0;
    double wake_to_run_us = 0;
};

// The runtime on `worker_cpu` only; the pipe is written by a thread bound to `waker_cpu`.
void run_rounds(int worker_cpu, int waker_cpu, int base_nice, int rounds, std::vector<SurrenderRound>& out) {
    ::setenv("STRATA_MONITOR", "ebpf", 1);
    Options options;
    options.cpus = {worker_cpu};
    options.monitor = monitor_from_env();
    options.cover_priority = CoverPriority::surrender;
    auto started = Runtime::start(options);
    ::unsetenv("STRATA_MONITOR");
    STRATA_REQUIRE(started.has_value(), started ? "" : started.error().what());
    auto sut = std::move(*started);
    ASSERT_EQ(sut->cover_priority(), CoverPriority::surrender) << sut->cover_reason();
    const auto now_ns = [] { return Clock::now().time_since_epoch().count(); };

    int set_up_again = 0;
    for (int round = 0; round < rounds && set_up_again < 4 * rounds;) {
        SurrenderRound r;
        int fds[2];
        ASSERT_EQ(::pipe(fds), 0);
        std::atomic<bool> go{false}, abandon{false};
        std::atomic<pid_t> woken_tid{0}, cover_tid{0};
        std::atomic<std::uint64_t> progress{0};
        std::atomic<Clock::time_point::rep> woke_at{0};
        const pid_t first_worker = test::only_worker_once_parked();
        TaskGroup group;
        sut->spawn(
            [&] {
                char byte = 0;
                woken_tid = static_cast<pid_t>(::gettid());
                while (!go.load()) {
                }
                EXPECT_EQ(::read(fds[0], &byte, 1), 1);
                woke_at = now_ns();
                // Computes on after the I/O without a scheduling point, so the
                // core holds two ready workers until the cover gives way.
                const auto cpu_start = thread_cpu_time();
                while (thread_cpu_time() - cpu_start < kComputeCpu) {
                    if (!r.lowered_seen && policy_of(cover_tid.load()) == SCHED_IDLE) {
                        r.lowered_seen = true;
                        r.cpu_until_lowered = thread_cpu_time() - cpu_start;
                    }
                }
            },
            &group);
        EXPECT_TRUE(wait_for([&] { return woken_tid.load() != 0; })) << "the first task never started";
        // Queued behind the first task, which then blocks: the monitor's event wakes the cover for it.
        sut->spawn(
            [&] {
                r.policy_while_covering = policy_of(0);
                cover_tid = static_cast<pid_t>(::gettid());
                // Computes until the blocked worker has woken and left the core.
                const auto deadline = Clock::now() + 2 * test::kHang;
                while (sut->stats()[0].surrenders == 0 || woke_at.load() == 0) {
                    progress.fetch_add(1, std::memory_order_relaxed);
                    if (abandon.load() || Clock::now() > deadline) return;
                }
                // Restored once the woken worker sleeps (the monitor's event after it parked).
                const auto normal_again = [&] {
                    errno = 0;
                    return policy_of(0) == SCHED_OTHER && ::getpriority(PRIO_PROCESS, 0) == base_nice;
                };
                const auto until = Clock::now() + test::kHang;
                while (!(r.restored = normal_again()) && Clock::now() < until) {
                }
                r.policy_after = policy_of(0);
                r.nice_after = ::getpriority(PRIO_PROCESS, 0);
            },
            &group);
        go = true;
        EXPECT_TRUE(wait_for([&] { return progress.load() > 1000 && thread_state(woken_tid.load()) == 'S'; }))
            << "the cover never computed";
        const bool scenario = test::one_blocked_worker_and_its_cover(*sut, first_worker, woken_tid, cover_tid);
        abandon = !scenario;
        const auto before = sut->stats()[0];
        Clock::time_point::rep written_at = now_ns();
        test::write_from(waker_cpu, fds[1]);
        sut->wait(group);
        const auto after = sut->stats()[0];
        ::close(fds[0]);
        ::close(fds[1]);
        r.kicks = after.kicks - before.kicks;
        r.wake_to_run_us = static_cast<double>(woke_at.load() - written_at) / 1e3;
        if (scenario) {
            out.push_back(r);
            ++round;
        } else {
            ++set_up_again;
        }
        // The next round starts from one active worker: surrenders are cumulative.
        sut->stop();
        auto restarted = Runtime::start(options);
        STRATA_REQUIRE(restarted.has_value(), restarted ? "" : restarted.error().what());
        sut = std::move(*restarted);
    }
    std::printf("cover priority surrender: %d set-ups were not the scenario\n", set_up_again);
}

TEST(RuntimeCoverSurrender, a_wakeup_from_another_cpu_makes_the_normal_cover_give_up_the_core) {
    STRATA_REQUIRE(test::is_root(), "root, for the BPF monitor and to take a thread back from nice 19");
    const auto cpus = test::allowed_cpus();
    STRATA_REQUIRE(cpus.size() >= 2, "two CPUs: the waker runs on another CPU than the workers");
    errno = 0;
    const int base_nice = ::getpriority(PRIO_PROCESS, 0);
    constexpr int rounds = 15;
    std::vector<SurrenderRound> got;
    run_rounds(cpus[0], cpus[1], base_nice, rounds, got);
    if (HasFatalFailure() || IsSkipped()) return;
    ASSERT_EQ(got.size(), static_cast<std::size_t>(rounds)) << "the scenario was set up too rarely";
    int normal_covering = 0, kicked = 0, restored = 0;
    std::string misses;
    for (std::size_t i = 0; i < got.size(); ++i) {
        const auto& r = got[i];
        normal_covering += r.policy_while_covering == SCHED_OTHER ? 1 : 0;
        kicked += r.kicks >= 1 && r.lowered_seen ? 1 : 0;
        restored += r.restored ? 1 : 0;
        if (r.kicks == 0 || !r.lowered_seen || !r.restored) {
            misses += "; round " + std::to_string(i) + ": kicks " + std::to_string(r.kicks) +
                      ", cover lowered within the woken worker's computation " + std::to_string(r.lowered_seen) +
                      ", wake -> run " + std::to_string(r.wake_to_run_us) + " us, policy after " +
                      std::to_string(r.policy_after) + ", nice after " + std::to_string(r.nice_after);
        }
    }
    std::vector<double> wake;
    std::chrono::nanoseconds cpu_until_lowered{0};
    for (const auto& r : got) {
        wake.push_back(r.wake_to_run_us);
        cpu_until_lowered = std::max(cpu_until_lowered, r.cpu_until_lowered);
    }
    std::ranges::sort(wake);
    const double median = wake[wake.size() / 2];
    std::printf(
        "cover priority surrender, waker on another CPU: wake -> run %.1f us (median of %d), %d kicked; the cover "
        "was lowered after at most %.1f us of the woken worker's CPU\n",
        median, rounds, kicked, std::chrono::duration<double, std::micro>(cpu_until_lowered).count());
    RecordProperty("surrender_wake_to_run_us", std::to_string(median));
    EXPECT_EQ(normal_covering, rounds) << "a surrender-mode cover keeps the normal policy while covering";
    EXPECT_EQ(kicked, rounds) << "the wakeup event made the runtime lower the cover to SCHED_IDLE" << misses;
    EXPECT_EQ(restored, rounds) << "the cover is normal at nice " << base_nice << " again" << misses;
}

}  // namespace
}  // namespace strata::runtime
