// SPDX-License-Identifier: MIT
// Backend off, and the argument checks every backend shares.
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include "strata/monitor.hpp"
#include "support/result.hpp"

namespace {

using strata::Errc;
using strata::monitor::Backend;
using strata::monitor::Monitor;
using strata::monitor::Options;
using strata::test::fails_with;

Options off_options(std::chrono::nanoseconds threshold = {}) {
    Options options;
    options.backend = Backend::off;
    options.threshold = threshold;
    return options;
}

std::unique_ptr<Monitor> start_off(int cores, Monitor::Callback callback = {}) {
    auto monitor = Monitor::start(off_options(), cores, std::move(callback));
    EXPECT_TRUE(monitor.has_value()) << monitor.error().what();
    return monitor ? std::move(*monitor) : nullptr;
}

TEST(MonitorOff, ready_counts_the_registered_workers_of_each_core) {
    auto sut = start_off(2);
    ASSERT_TRUE(sut);
    EXPECT_EQ(sut->backend(), Backend::off);
    EXPECT_EQ(sut->ready(0), 0);

    STRATA_ASSERT_OK(sut->register_worker(::gettid(), 1));
    EXPECT_EQ(sut->ready(0), 0);
    EXPECT_EQ(sut->ready(1), 1);

    sut->unregister_worker(::gettid());
    EXPECT_EQ(sut->ready(1), 0);
}

TEST(MonitorOff, a_blocked_worker_still_counts_as_ready_and_no_callback_runs) {
    std::atomic<int> callbacks{0};
    auto sut = start_off(1, [&](int) { ++callbacks; });
    ASSERT_TRUE(sut);
    int pipe_fds[2];
    ASSERT_EQ(::pipe(pipe_fds), 0);
    std::atomic<pid_t> tid{0};
    std::thread reader([&] {
        tid = ::gettid();
        char byte = 0;
        (void)::read(pipe_fds[0], &byte, 1);
    });
    while (tid.load() == 0) std::this_thread::yield();
    STRATA_ASSERT_OK(sut->register_worker(tid.load(), 0));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));

    EXPECT_EQ(sut->ready(0), 1);
    EXPECT_EQ(callbacks.load(), 0);
    EXPECT_EQ(sut->stats(0).blocks, 0U);

    ASSERT_EQ(::write(pipe_fds[1], "x", 1), 1);
    reader.join();
    sut->unregister_worker(tid.load());
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
}

TEST(MonitorStart, zero_cores_is_an_error_naming_cores) {
    EXPECT_TRUE(fails_with(Monitor::start(off_options(), 0, {}), Errc::invalid_argument, {"cores", "0"}));
}

TEST(MonitorStart, a_negative_threshold_is_an_error) {
    EXPECT_TRUE(fails_with(Monitor::start(off_options(std::chrono::nanoseconds(-1)), 1, {}), Errc::invalid_argument,
                           {"threshold"}));
}

TEST(MonitorRegister, a_core_out_of_range_is_an_error_naming_the_core) {
    auto sut = start_off(2);
    ASSERT_TRUE(sut);
    EXPECT_TRUE(fails_with(sut->register_worker(::gettid(), 2), Errc::invalid_argument, {"core", "2"}));
    EXPECT_TRUE(fails_with(sut->register_worker(::gettid(), -1), Errc::invalid_argument, {"core", "-1"}));
}

TEST(MonitorRegister, a_tid_outside_this_process_is_an_error_naming_the_tid) {
    auto sut = start_off(1);
    ASSERT_TRUE(sut);
    // pid 1 is never a thread of a test process.
    EXPECT_TRUE(fails_with(sut->register_worker(1, 0), Errc::invalid_argument, {"tid", "1"}));
}

TEST(MonitorRegister, registering_twice_is_an_error_and_keeps_one_count) {
    auto sut = start_off(1);
    ASSERT_TRUE(sut);
    STRATA_ASSERT_OK(sut->register_worker(::gettid(), 0));
    EXPECT_TRUE(fails_with(sut->register_worker(::gettid(), 0), Errc::already_exists, {"tid"}));
    EXPECT_EQ(sut->ready(0), 1);
    sut->unregister_worker(::gettid());
}

TEST(MonitorRegister, unregistering_an_unknown_tid_changes_nothing) {
    auto sut = start_off(1);
    ASSERT_TRUE(sut);
    sut->unregister_worker(::gettid());
    EXPECT_EQ(sut->ready(0), 0);
}

TEST(MonitorReady, a_core_out_of_range_reads_zero) {
    auto sut = start_off(1);
    ASSERT_TRUE(sut);
    EXPECT_EQ(sut->ready(5), 0);
    EXPECT_EQ(sut->ready(-1), 0);
    EXPECT_EQ(sut->stats(5).blocks, 0U);
}

TEST(MonitorStats, time_with_no_ready_worker_grows_while_none_is_registered) {
    auto sut = start_off(1);
    ASSERT_TRUE(sut);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_GE(sut->stats(0).no_ready_ns, 10'000'000U);
    EXPECT_EQ(sut->stats(0).oversubscribed_ns, 0U);
}

}  // namespace
