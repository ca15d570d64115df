// SPDX-License-Identifier: MIT
// The ebpf backend's wakeup event (Monitor::notify_when_woken): armed, the
// wakeup that gives a core a second ready worker calls on_core_settled once;
// a wakeup that leaves it with one, or one that is not armed, does not.
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

class MonitorWoken : public ::testing::Test {
protected:
    void SetUp() override { STRATA_REQUIRE(strata::test::is_root(), "root, for the BPF monitor"); }

    // Starts the ebpf monitor for one core, counting on_core_settled calls.
    void start() {
        Options options;
        options.backend = Backend::ebpf;
        auto started = Monitor::start(options, 1, {}, [this](int core) {
            if (core == 0) calls.fetch_add(1);
        });
        ASSERT_TRUE(started.has_value()) << started.error().what();
        sut = std::move(*started);
    }

    std::unique_ptr<Monitor> sut;
    std::atomic<int> calls{0};
};

TEST_F(MonitorWoken, an_armed_wakeup_that_gives_the_core_a_second_ready_worker_calls_back_once) {
    ASSERT_NO_FATAL_FAILURE(start());
    Pipe first;
    Pipe second;
    std::atomic<bool> done{false};
    // A running worker (the cover) and one blocked in read(), both of core 0.
    PinnedWorker cover(sut.get(), 0, 0, [&] { spin_until([&] { return done.load(); }, 10'000ms); });
    PinnedWorker blocked(sut.get(), 0, 0, [&] {
        first.read_byte();
        second.read_byte();
    });
    ASSERT_TRUE(cover.registered() && blocked.registered());
    ASSERT_TRUE(wait_until([&] { return sut->ready(0) == 1; })) << "ready " << sut->ready(0);

    ASSERT_TRUE(sut->notify_when_woken(0)) << "the ebpf backend reports wakeups";
    first.write_byte();
    EXPECT_TRUE(wait_until([&] { return calls.load() > 0; })) << "no call after the armed wakeup";
    // The woken worker blocks again in its second read; its next wakeup is not armed.
    ASSERT_TRUE(wait_until([&] { return sut->ready(0) == 1; })) << "ready " << sut->ready(0);
    second.write_byte();
    std::this_thread::sleep_for(50ms);
    EXPECT_EQ(calls.load(), 1) << "one call per arming";
    const auto stats = sut->stats(0);
    EXPECT_EQ(stats.woken_events, 1U) << "one wakeup event counted";
    // From the BPF wakeup to the monitor's thread: more than nothing, less than the test's wait.
    EXPECT_GT(stats.woken_event_latency_ns, 0U);
    EXPECT_LT(stats.woken_event_latency_ns, std::chrono::nanoseconds(strata::test::kHang).count());
    done = true;
}

TEST_F(MonitorWoken, a_wakeup_that_leaves_the_core_with_one_ready_worker_does_not_call_back) {
    ASSERT_NO_FATAL_FAILURE(start());
    Pipe pipe;
    Pipe release;
    // The core's only worker blocks: its wakeup takes the core from none to one.
    PinnedWorker blocked(sut.get(), 0, 0, [&] {
        pipe.read_byte();
        release.read_byte();
    });
    ASSERT_TRUE(blocked.registered());
    ASSERT_TRUE(wait_until([&] { return sut->ready(0) == 0; })) << "ready " << sut->ready(0);
    ASSERT_TRUE(sut->notify_when_woken(0));
    pipe.write_byte();
    ASSERT_TRUE(wait_until([&] { return sut->stats(0).unblocks >= 1; })) << "the wakeup was not seen";
    std::this_thread::sleep_for(50ms);
    EXPECT_EQ(calls.load(), 0) << "called back for a wakeup that left one ready worker";
    EXPECT_EQ(sut->stats(0).woken_events, 0U) << "no wakeup event counted";
    release.write_byte();
}

}  // namespace
