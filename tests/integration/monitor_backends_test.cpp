// SPDX-License-Identifier: MIT
// What the ebpf and proc backends see: blocks, unblocks, preemption, threads
// that are not registered, the threshold. Real threads, pinned to one CPU,
// blocked in read() on a real pipe.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <vector>

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
using strata::test::now_ns;
using strata::test::PinnedWorker;
using strata::test::Pipe;
using strata::test::spin_until;
using strata::test::wait_until;

// Records every callback with its time, for the assertions.
struct Callbacks {
    std::mutex mutex;
    std::vector<std::pair<int, std::uint64_t>> calls;

    Monitor::Callback callback() {
        return [this](int core) {
            const std::scoped_lock lock(mutex);
            calls.emplace_back(core, now_ns());
        };
    }
    std::size_t count() {
        const std::scoped_lock lock(mutex);
        return calls.size();
    }
    std::uint64_t first_time() {
        const std::scoped_lock lock(mutex);
        return calls.empty() ? 0 : calls.front().second;
    }
};

class MonitorBackend : public ::testing::TestWithParam<Backend> {
protected:
    void SetUp() override {
        if (GetParam() == Backend::ebpf) STRATA_REQUIRE(strata::test::is_root(), "root, for the BPF monitor");
    }

    // A long proc period would make every wait in these tests long; 200 us
    // keeps them short and the sampler still cheap.
    std::unique_ptr<Monitor> start(int cores, std::chrono::nanoseconds threshold = {}) {
        Options options;
        options.backend = GetParam();
        options.threshold = threshold;
        options.proc_period = 200us;
        auto monitor = Monitor::start(options, cores, callbacks.callback());
        EXPECT_TRUE(monitor.has_value()) << monitor.error().what();
        return monitor ? std::move(*monitor) : nullptr;
    }

    // How long a change may take to show at most: immediate for ebpf, a few
    // periods for proc; a hang bound, far beyond what load delays it by.
    static std::chrono::milliseconds settle() { return strata::test::kHang; }

    Callbacks callbacks;
};

TEST_P(MonitorBackend, a_worker_blocked_in_read_on_a_pipe_is_seen_as_blocked_and_the_callback_names_its_core) {
    auto sut = start(2);
    ASSERT_TRUE(sut);
    EXPECT_EQ(sut->backend(), GetParam());
    Pipe pipe;
    std::atomic<bool> go{false};
    PinnedWorker worker(sut.get(), 1, 1, [&] {
        spin_until([&] { return go.load(); });
        pipe.read_byte();
    });
    ASSERT_TRUE(worker.registered());
    EXPECT_EQ(sut->ready(1), 1);

    go = true;
    EXPECT_TRUE(wait_until([&] { return sut->ready(1) == 0; }, settle()));
    EXPECT_TRUE(wait_until([&] { return callbacks.count() == 1; }, settle()));
    {
        const std::scoped_lock lock(callbacks.mutex);
        ASSERT_EQ(callbacks.calls.size(), 1U);
        EXPECT_EQ(callbacks.calls[0].first, 1);
    }
    EXPECT_EQ(sut->ready(0), 0);
    EXPECT_EQ(sut->stats(1).blocks, 1U);
    EXPECT_EQ(sut->stats(1).callbacks, 1U);
    EXPECT_EQ(sut->stats(0).blocks, 0U);

    pipe.write_byte();
    worker.join();
}

TEST_P(MonitorBackend, the_unblock_is_seen_and_the_worker_counts_as_ready_again) {
    auto sut = start(1);
    ASSERT_TRUE(sut);
    Pipe pipe;
    std::atomic<bool> go{false};
    std::atomic<bool> done{false};
    PinnedWorker worker(sut.get(), 0, 0, [&] {
        spin_until([&] { return go.load(); });
        pipe.read_byte();
        // Stay ready (spinning, no system call) until the test has looked.
        spin_until([&] { return done.load(); }, 10s);
    });
    go = true;
    ASSERT_TRUE(wait_until([&] { return sut->ready(0) == 0; }, settle()));

    pipe.write_byte();
    EXPECT_TRUE(wait_until([&] { return sut->ready(0) == 1; }, settle()));
    EXPECT_TRUE(wait_until([&] { return sut->stats(0).unblocks == 1; }, settle()));
    EXPECT_EQ(sut->stats(0).blocks, 1U);
    done = true;
    worker.join();
    EXPECT_EQ(sut->ready(0), 0);
}

TEST_P(MonitorBackend, preemption_of_two_busy_workers_on_one_core_is_not_counted_as_a_block) {
    auto sut = start(1);
    ASSERT_TRUE(sut);
    std::atomic<bool> stop{false};
    const auto busy = [&] { spin_until([&] { return stop.load(); }, 10s); };
    PinnedWorker first(sut.get(), 0, 0, busy);
    PinnedWorker second(sut.get(), 0, 0, busy);
    EXPECT_TRUE(wait_until([&] { return sut->ready(0) == 2; }, settle()));
    // Long enough for the scheduler to switch between them many times.
    std::this_thread::sleep_for(300ms);
    const auto stats = sut->stats(0);
    stop = true;
    first.join();
    second.join();

    EXPECT_EQ(stats.blocks, 0U);
    EXPECT_EQ(stats.unblocks, 0U);
    EXPECT_EQ(callbacks.count(), 0U);
    // The test can fail: the two threads were really switched.
    EXPECT_GT(stats.context_switches, 2U);
    EXPECT_GT(stats.oversubscribed_ns, 100'000'000U);
}

TEST_P(MonitorBackend, a_thread_that_is_not_registered_is_ignored_when_it_blocks) {
    auto sut = start(1);
    ASSERT_TRUE(sut);
    std::atomic<bool> stop{false};
    PinnedWorker registered(sut.get(), 0, 0, [&] { spin_until([&] { return stop.load(); }, 10s); });
    Pipe pipe;
    std::atomic<bool> reading{false};
    PinnedWorker unregistered(nullptr, 0, 0, [&] {
        reading = true;
        pipe.read_byte();
    });
    ASSERT_TRUE(wait_until([&] { return reading.load(); }));
    std::this_thread::sleep_for(20ms);
    EXPECT_EQ(sut->ready(0), 1);
    EXPECT_EQ(sut->stats(0).blocks, 0U);

    pipe.write_byte();
    unregistered.join();
    stop = true;
    registered.join();
    EXPECT_EQ(sut->stats(0).unblocks, 0U);
    EXPECT_EQ(callbacks.count(), 0U);
}

TEST_P(MonitorBackend, with_a_threshold_a_short_block_does_not_call_back_and_a_long_one_does_after_the_threshold) {
    // 250 ms: a woken worker on a loaded 2-core machine can wait tens of ms for its CPU, and a block
    // lasts until it runs again, so a shorter threshold would turn the short block into a long one.
    auto sut = start(1, 250ms);
    ASSERT_TRUE(sut);
    Pipe pipe;
    std::atomic<int> step{0};
    std::atomic<std::uint64_t> long_block_start{0};
    PinnedWorker worker(sut.get(), 0, 0, [&] {
        spin_until([&] { return step.load() == 1; });
        pipe.read_byte();  // short: the test writes at once
        spin_until([&] { return step.load() == 2; });
        long_block_start = now_ns();
        pipe.read_byte();  // long: the test writes after the threshold
    });
    step = 1;
    ASSERT_TRUE(wait_until([&] { return sut->stats(0).blocks >= 1 || sut->ready(0) == 0; }, settle()));
    pipe.write_byte();
    ASSERT_TRUE(wait_until([&] { return sut->ready(0) == 1; }, settle()));
    std::this_thread::sleep_for(300ms);
    EXPECT_EQ(callbacks.count(), 0U) << "a block shorter than the threshold called back";

    step = 2;
    ASSERT_TRUE(wait_until([&] { return callbacks.count() == 1; }));
    EXPECT_GE(callbacks.first_time() - long_block_start.load(), 250'000'000U);
    pipe.write_byte();
    worker.join();
}

TEST_P(MonitorBackend, a_worker_registered_and_unregistered_by_itself_leaves_the_counts_at_zero) {
    auto sut = start(2);
    ASSERT_TRUE(sut);
    for (int round = 0; round < 20; ++round) {
        Pipe pipe;
        PinnedWorker worker(sut.get(), round % 2, round % 2, [&] {
            pipe.write_byte();
            pipe.read_byte();
        });
        worker.join();
    }
    EXPECT_EQ(sut->ready(0), 0);
    EXPECT_EQ(sut->ready(1), 0);
}

INSTANTIATE_TEST_SUITE_P(Backends, MonitorBackend, ::testing::Values(Backend::ebpf, Backend::proc),
                         [](const auto& param_info) {
                             return std::string(strata::monitor::to_string(param_info.param));
                         });

}  // namespace
