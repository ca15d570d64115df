// SPDX-License-Identifier: MIT
// The ebpf backend's split of oversubscribed time (CoreStats::
// oversubscribing_wakeups, oversubscribed_wait_ns): a wakeup that gives a
// core a second ready worker counts, and its wait lasts until the woken
// worker runs, not until the core stops being oversubscribed.
#include <sched.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "monitor_threads.hpp"
#include "strata/monitor.hpp"
#include "support/capability.hpp"
#include "support/result.hpp"

namespace {

using namespace std::chrono_literals;
using strata::monitor::Backend;
using strata::monitor::Monitor;
using strata::monitor::Options;
using strata::test::PinnedWorker;
using strata::test::Pipe;
using strata::test::spin_until;
using strata::test::wait_until;

void set_idle_policy() {
    sched_param param{};
    (void)::sched_setscheduler(0, SCHED_IDLE, &param);
}

bool set_fifo_policy() {
    sched_param param{};
    param.sched_priority = 1;
    return ::sched_setscheduler(0, SCHED_FIFO, &param) == 0;
}

// Runs `release` when the scope ends: on an early return (a failed
// assertion) the threads blocked on the test's pipes are let go before the
// workers are joined.
template <class F>
struct OnExit {
    F release;
    ~OnExit() { release(); }
};
template <class F>
OnExit(F) -> OnExit<F>;

// Pins the calling (test) thread to a CPU other than 0 for its lifetime, so
// that a real-time thread spinning on CPU 0 does not hold it back.
class AwayFromCpu0 {
public:
    AwayFromCpu0() {
        (void)::sched_getaffinity(0, sizeof(saved_), &saved_);
        strata::test::pin_to_cpu(1);
    }
    ~AwayFromCpu0() { (void)::sched_setaffinity(0, sizeof(saved_), &saved_); }
    AwayFromCpu0(const AwayFromCpu0&) = delete;
    AwayFromCpu0& operator=(const AwayFromCpu0&) = delete;

private:
    cpu_set_t saved_{};
};

void spin_for(std::chrono::milliseconds duration) {
    const auto until = std::chrono::steady_clock::now() + duration;
    while (std::chrono::steady_clock::now() < until) {
    }
}

class MonitorWakeWait : public ::testing::Test {
protected:
    void SetUp() override {
        STRATA_REQUIRE(strata::test::is_root(), "root, for the BPF monitor");
        Options options;
        options.backend = Backend::ebpf;
        auto started = Monitor::start(options, 1, {});
        ASSERT_TRUE(started.has_value()) << started.error().what();
        sut = std::move(*started);
    }
    std::unique_ptr<Monitor> sut;
};

// The other worker of the woken one's CPU computes at SCHED_FIFO for 20 ms
// more: the woken worker (normal) cannot run until that one blocks. (A
// SCHED_IDLE woken worker behind a normal one would not do: EEVDF picks it at
// once whenever its virtual runtime lies behind the other's, which makes the
// other ineligible.)
TEST_F(MonitorWakeWait, a_worker_woken_behind_a_running_one_waits_until_that_one_blocks) {
    STRATA_REQUIRE(std::thread::hardware_concurrency() >= 2, "2 CPUs: the test's own thread leaves CPU 0");
    const AwayFromCpu0 away;
    Pipe wake;
    Pipe park;
    std::atomic<bool> stop_spinning{false};
    std::atomic<bool> fifo_set{false};
    std::atomic<bool> fifo_ok{false};
    PinnedWorker woken(sut.get(), 0, 0, [&] { wake.read_byte(); });
    ASSERT_TRUE(wait_until([&] { return sut->ready(0) == 0; })) << "ready " << sut->ready(0);
    PinnedWorker runner(sut.get(), 0, 0, [&] {
        fifo_ok = set_fifo_policy();
        fifo_set = true;
        if (fifo_ok.load()) spin_until([&] { return stop_spinning.load(); }, 10'000ms);
        park.read_byte();
    });
    const OnExit release{[&] {
        stop_spinning = true;
        wake.write_byte();
        park.write_byte();
    }};
    ASSERT_TRUE(runner.registered() && woken.registered());
    ASSERT_TRUE(wait_until([&] { return fifo_set.load() && sut->ready(0) == 1; })) << "ready " << sut->ready(0);
    STRATA_REQUIRE(fifo_ok.load(), "SCHED_FIFO (root or CAP_SYS_NICE)");
    const auto before = sut->stats(0);
    wake.write_byte();
    std::this_thread::sleep_for(20ms);
    stop_spinning = true;
    woken.join();
    const auto after = sut->stats(0);

    const auto wait_ms = static_cast<double>(after.oversubscribed_wait_ns - before.oversubscribed_wait_ns) / 1e6;
    const auto over_ms = static_cast<double>(after.oversubscribed_ns - before.oversubscribed_ns) / 1e6;
    std::printf("behind a running worker: oversubscribed %.2f ms, of which waiting %.2f ms\n", over_ms, wait_ms);
    EXPECT_EQ(after.oversubscribing_wakeups - before.oversubscribing_wakeups, 1U);
    EXPECT_GE(wait_ms, 15.0) << "the woken worker could not run while the other computed";
    EXPECT_LE(wait_ms, over_ms + 0.5) << "the wait is part of the oversubscribed time";
}

// The woken worker is ahead of a SCHED_IDLE one, and computes for 20 ms once
// it runs before it blocks: oversubscribed for those 20 ms, but waiting only
// until it ran. Both sides of that are measured here, so load (which delays
// the woken worker's first run) moves the figures but not the order.
TEST_F(MonitorWakeWait,
       a_woken_worker_ahead_of_an_idle_one_waits_only_until_it_runs_while_the_core_stays_oversubscribed) {
    Pipe wake;
    Pipe park;
    std::atomic<bool> stop_spinning{false};
    std::atomic<bool> idle_set{false};
    std::atomic<std::uint64_t> ran_at{0}, computed_until{0};
    PinnedWorker runner(sut.get(), 0, 0, [&] {
        set_idle_policy();
        idle_set = true;
        spin_until([&] { return stop_spinning.load(); }, 10'000ms);
        park.read_byte();
    });
    PinnedWorker woken(sut.get(), 0, 0, [&] {
        wake.read_byte();
        ran_at = strata::test::now_ns();
        spin_for(20ms);
        computed_until = strata::test::now_ns();
        park.read_byte();
    });
    const OnExit release{[&] {
        stop_spinning = true;
        wake.write_byte();
        park.write_byte();
        park.write_byte();
    }};
    ASSERT_TRUE(runner.registered() && woken.registered());
    ASSERT_TRUE(wait_until([&] { return idle_set.load() && sut->ready(0) == 1; })) << "ready " << sut->ready(0);
    const auto before = sut->stats(0);
    const auto written_before = strata::test::now_ns();
    wake.write_byte();
    // The woken worker computes, then blocks in its second read: ready 2 -> 1.
    ASSERT_TRUE(wait_until([&] { return sut->stats(0).blocks > before.blocks; }));
    const auto after = sut->stats(0);

    const auto wait_ns = after.oversubscribed_wait_ns - before.oversubscribed_wait_ns;
    const auto over_ns = after.oversubscribed_ns - before.oversubscribed_ns;
    const auto until_it_ran_ns = ran_at.load() - written_before;
    const auto computing_ns = computed_until.load() - ran_at.load();
    std::printf("ahead of an idle worker: oversubscribed %.2f ms, of which waiting %.2f ms (%.2f ms until it ran)\n",
                static_cast<double>(over_ns) / 1e6, static_cast<double>(wait_ns) / 1e6,
                static_cast<double>(until_it_ran_ns) / 1e6);
    EXPECT_EQ(after.oversubscribing_wakeups - before.oversubscribing_wakeups, 1U);
    // The wait lies between the write and the woken worker's first clock read
    // after it; counted until the core stopped being oversubscribed, it would
    // hold the 20 ms of computing as well.
    EXPECT_LE(wait_ns, until_it_ran_ns) << "the wait went on after the woken worker ran";
    EXPECT_GE(over_ns - wait_ns, computing_ns) << "two ready workers while the woken one computed";
}

}  // namespace
