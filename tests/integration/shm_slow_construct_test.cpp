// SPDX-License-Identifier: MIT
// A named object another process is still constructing: its finders wait
// while the creator is attached, and stop waiting soon after it dies.
#include <chrono>
#include <optional>
#include <thread>

#include <gtest/gtest.h>

#include "integration/shm_crash_points.hpp"
#include "integration/shm_process.hpp"
#include "unit/shm_test_support.hpp"

namespace strata {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using test::fails_with;

const test::Signal* g_constructing = nullptr;  // the child's constructor says it started
std::chrono::milliseconds g_construct_time{0};

/// Takes g_construct_time to construct (a vector of a GB zeroes for seconds).
struct SlowToBuild {
    int value = 0;
    SlowToBuild() {
        g_constructing->notify();
        std::this_thread::sleep_for(g_construct_time);
        value = 42;
    }
};

pid_t spawn_builder(const test::ShmFixture& f, const test::Signal& constructing, std::chrono::milliseconds time) {
    g_constructing = &constructing;
    g_construct_time = time;
    return test::spawn([&f] {
        auto s = f.open(SegmentMode::open_only, 0);
        STRATA_CHILD_CHECK_OK(s);
        STRATA_CHILD_CHECK_OK(s->simple<SlowToBuild>("slow"));
        return 0;
    });
}

/// A segment, and a child process that attaches it and constructs "slow" in it.
class ShmSlowConstruct : public ::testing::Test {
protected:
    void SetUp() override {
        auto made = f.open(SegmentMode::create_only);
        ASSERT_TRUE(made.has_value()) << made.error().what();
        seg.emplace(std::move(*made));
    }
    /// Starts the child, whose constructor takes `time`; true once the constructor began.
    bool start_builder(std::chrono::milliseconds time) {
        builder = spawn_builder(f, constructing, time);
        return constructing.wait();
    }

    test::ShmFixture f;
    std::optional<Segment> seg;
    const test::Signal constructing;
    pid_t builder = -1;
};

TEST_F(ShmSlowConstruct, a_finder_waits_for_an_object_a_live_user_takes_three_seconds_to_construct) {
    ASSERT_TRUE(start_builder(3000ms));
    const auto found = seg->find<SlowToBuild>("slow");
    ASSERT_TRUE(found.has_value()) << found.error().what();
    EXPECT_EQ((*found)->value, 42) << "found before its constructor finished";
    const auto status = test::wait_for_child(builder);
    EXPECT_TRUE(status.exited && status.exit_code == 0);
}

TEST_F(ShmSlowConstruct, a_finder_of_an_object_whose_constructor_was_killed_is_told_within_two_seconds) {
    ASSERT_TRUE(start_builder(3600s));
    test::kill_child(builder);
    const auto start = Clock::now();
    EXPECT_TRUE(fails_with(seg->find<SlowToBuild>("slow"), Errc::busy, {"slow", "constructor died"}));
    EXPECT_LT(Clock::now() - start, 2s) << "waited for a dead constructor";
}

}  // namespace
}  // namespace strata
