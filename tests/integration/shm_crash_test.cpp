// SPDX-License-Identifier: MIT
// SIGKILL a user of a segment at each critical point, many times over, and
// check that the survivor gets an error naming the dead user within one
// second, that the port is recovered or the segment marked broken, and that no
// segment is left behind. Kills while a port's lock is held: shm_port_heal_test.cpp.
#include <chrono>
#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "integration/shm_crash_points.hpp"
#include "integration/shm_process.hpp"
#include "strata/shm/testing.hpp"
#include "unit/shm_test_support.hpp"

namespace strata {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// How long a survivor waits on a killed peer: a hang bound, far beyond the
// 20 ms liveness tick and any delay load adds. The checks below want the
// error well before it: noticed by the tick while waiting, not when the wait
// ran out.
constexpr auto kPeerWait = 20s;
using test::fails_with;
using test::kill_child;
using test::Signal;

constexpr int kKillsPerPoint = 50;

/// No segment left in `dir` once every survivor closed.
void expect_no_segment_left(const test::ShmFixture& f) {
    auto listed = list_segments(f.dir.path());
    ASSERT_TRUE(listed.has_value()) << listed.error().what();
    for (const auto& info : *listed) {
        ADD_FAILURE() << "segment left behind: " << info.name << " with " << info.users_alive << " users alive";
    }
    EXPECT_TRUE(f.dir.entries().empty());
}

TEST(ShmCrash, a_producer_killed_between_loan_and_commit_is_reported_and_its_message_skipped) {
    test::ShmFixture f;
    {
        STRATA_ASSERT_ASSIGN(seg, f.open(SegmentMode::create_only));
        const PortOptions shape{.slots = 4, .slot_bytes = 8};
        STRATA_ASSERT_ASSIGN(in, seg.port("p", PortRole::consumer, shape));
        std::uint64_t expected_next = 0;
        for (int kill = 0; kill < kKillsPerPoint; ++kill) {
            const int before = kill % 3;  // messages committed before the fatal loan
            Signal at_point;
            const pid_t victim = test::spawn([&] {
                auto s = f.open(SegmentMode::open_only, 0);
                STRATA_CHILD_CHECK_OK(s);
                auto out = s->port("p", PortRole::producer);
                STRATA_CHILD_CHECK_OK(out);
                for (int i = 0; i < before; ++i) {
                    auto loan = out->loan();
                    STRATA_CHILD_CHECK_OK(loan);
                    STRATA_CHILD_CHECK_OK(out->commit(std::move(*loan)));
                }
                auto loan = out->loan();
                STRATA_CHILD_CHECK_OK(loan);
                at_point.notify();
                for (;;) {
                    ::pause();
                }
            });
            ASSERT_TRUE(at_point.wait());
            kill_child(victim);
            const auto killed_at = Clock::now();
            for (int i = 0; i < before; ++i) {
                STRATA_ASSERT_ASSIGN(sample, in.recv(kPeerWait));
                EXPECT_EQ(sample.sequence(), expected_next++);
            }
            const auto error = in.recv(kPeerWait);
            EXPECT_LT(Clock::now() - killed_at, kPeerWait / 2) << "kill " << kill;
            ASSERT_TRUE(fails_with(error, Errc::peer_dead, {"producer", "died between loan and commit", "pid"}))
                << "kill " << kill;
            ++expected_next;  // the dropped message
        }
        // Recovered: a new producer's message arrives with the next sequence.
        Signal joined;
        const pid_t producer = test::spawn([&] {
            auto s = f.open(SegmentMode::open_only, 0);
            STRATA_CHILD_CHECK_OK(s);
            auto out = s->port("p", PortRole::producer);
            STRATA_CHILD_CHECK_OK(out);
            joined.notify();
            auto loan = out->loan();
            STRATA_CHILD_CHECK_OK(loan);
            STRATA_CHILD_CHECK_OK(out->commit(std::move(*loan)));
            return 0;
        });
        ASSERT_TRUE(joined.wait());
        STRATA_ASSERT_ASSIGN(last, in.recv(kPeerWait));
        EXPECT_EQ(last.sequence(), expected_next);
        EXPECT_TRUE(test::wait_for_child(producer).succeeded());
    }
    expect_no_segment_left(f);
}

TEST(ShmCrash, a_consumer_killed_holding_samples_releases_them_and_the_producer_is_told) {
    test::ShmFixture f;
    {
        STRATA_ASSERT_ASSIGN(seg, f.open(SegmentMode::create_only));
        STRATA_ASSERT_ASSIGN(out, seg.port("p", PortRole::producer, {.slots = 2}));
        STRATA_ASSERT_ASSIGN(n, seg.make<int>(7));
        for (int kill = 0; kill < kKillsPerPoint; ++kill) {
            Signal at_point;
            const pid_t victim = test::spawn([&] {
                auto s = f.open(SegmentMode::open_only, 0);
                STRATA_CHILD_CHECK_OK(s);
                auto in = s->port("p", PortRole::consumer);
                STRATA_CHILD_CHECK_OK(in);
                at_point.notify();
                auto held = in->recv<int>(5s);  // held, never released
                STRATA_CHILD_CHECK_OK(held);
                at_point.notify();
                for (;;) {
                    ::pause();
                }
            });
            ASSERT_TRUE(at_point.wait());
            STRATA_ASSERT_OK(out.send(*n, 5s));
            STRATA_ASSERT_OK(out.send(*n, 5s));
            ASSERT_TRUE(at_point.wait());
            kill_child(victim);
            const auto killed_at = Clock::now();
            // Both slots are taken (one held, one not received): only recovery frees them.
            const auto error = out.loan(kPeerWait);
            EXPECT_LT(Clock::now() - killed_at, kPeerWait / 2) << "kill " << kill;
            ASSERT_TRUE(fails_with(error, Errc::peer_dead, {"consumer 0", "died", "released"})) << "kill " << kill;
            STRATA_ASSERT_ASSIGN(loan, out.loan(1s));  // recovered: the slots are free
        }
    }
    expect_no_segment_left(f);
}

TEST(ShmCrash, a_user_killed_in_the_middle_of_an_allocation_marks_the_segment_broken) {
    test::ShmFixture f;
    for (int kill = 0; kill < kKillsPerPoint; ++kill) {
        STRATA_ASSERT_ASSIGN(seg, f.open(SegmentMode::recreate));
        STRATA_ASSERT_ASSIGN(before, seg.make<int>(1));
        Signal at_point;
        const pid_t victim = test::spawn([&] {
            auto s = f.open(SegmentMode::open_only, 0);
            STRATA_CHILD_CHECK_OK(s);
            test::arm(at_point, shm_testing::CrashPoint::allocator_lock_held);
            (void)s->make<strata::vector<int>>(std::size_t{1000});
            return 1;
        });
        ASSERT_TRUE(at_point.wait());
        kill_child(victim);
        const auto killed_at = Clock::now();
        const auto error = seg.make<int>(2);
        EXPECT_LT(Clock::now() - killed_at, kPeerWait / 2) << "kill " << kill;
        ASSERT_TRUE(
            fails_with(error, Errc::broken,
                       {fmt::format("segment '{}' is broken", f.name), "died holding the segment's allocator lock",
                        "pid", "reopen it with SegmentMode::recreate"}))
            << "kill " << kill;
        EXPECT_NE(seg.broken_reason(), "");
        EXPECT_TRUE(fails_with(seg.find<int>("x"), Errc::broken, {"broken"}));
        EXPECT_TRUE(fails_with(seg.load<int>(Handle{seg.id(), 1, 0, 0}), Errc::broken, {"broken"}));
        (void)before;
    }
    expect_no_segment_left(f);
}

TEST(ShmCrash, a_user_killed_holding_the_name_index_lock_marks_the_segment_broken_naming_what_to_recreate) {
    test::ShmFixture f;
    for (int kill = 0; kill < kKillsPerPoint / 5; ++kill) {
        STRATA_ASSERT_ASSIGN(seg, f.open(SegmentMode::recreate));
        Signal at_point;
        const pid_t victim = test::spawn([&] {
            auto s = f.open(SegmentMode::open_only, 0);
            STRATA_CHILD_CHECK_OK(s);
            test::arm(at_point, shm_testing::CrashPoint::allocator_lock_held);
            (void)s->simple<int>("named", 1);  // looks the name up first, holding the index's lock
            return 1;
        });
        ASSERT_TRUE(at_point.wait());
        kill_child(victim);
        ASSERT_TRUE(fails_with(seg.find<int>("named"), Errc::broken,
                               {fmt::format("segment '{}' is broken", f.name), "name-index lock",
                                fmt::format("pid {}", victim), "reopen it with SegmentMode::recreate"}))
            << "kill " << kill;
    }
    expect_no_segment_left(f);
}

TEST(ShmCrash, a_user_killed_while_its_container_grows_leaves_containers_failing_with_what_to_recreate) {
    test::ShmFixture f;
    for (int kill = 0; kill < kKillsPerPoint / 5; ++kill) {
        STRATA_ASSERT_ASSIGN(seg, f.open(SegmentMode::recreate));
        STRATA_ASSERT_ASSIGN(mine, seg.container<strata::vector<int>>("mine"));
        STRATA_ASSERT_OK(seg.container<strata::vector<int>>("theirs"));
        Signal at_point;
        const pid_t victim = test::spawn([&] {
            auto s = f.open(SegmentMode::open_only, 0);
            STRATA_CHILD_CHECK_OK(s);
            auto v = s->find<strata::vector<int>>("theirs");
            STRATA_CHILD_CHECK_OK(v);
            test::arm(at_point, shm_testing::CrashPoint::allocator_lock_held);
            (*v)->push_back(1);  // grows: allocates under the allocator's lock
            return 1;
        });
        ASSERT_TRUE(at_point.wait());
        kill_child(victim);
        // A container has no lock of its own: the one it shares is the allocator's.
        try {
            mine->push_back(2);
            ADD_FAILURE() << "kill " << kill << ": growing a container of a broken segment succeeded";
        } catch (const segment_broken& e) {
            const std::string what = e.what();
            EXPECT_NE(what.find(fmt::format("segment '{}' is broken", f.name)), std::string::npos) << what;
            EXPECT_NE(what.find(fmt::format("pid {}", victim)), std::string::npos) << what;
            EXPECT_NE(what.find("reopen it with SegmentMode::recreate"), std::string::npos) << what;
        }
        EXPECT_TRUE(fails_with(seg.container<strata::vector<int>>("another"), Errc::broken, {f.name, "recreate"}));
    }
    expect_no_segment_left(f);
}

TEST(ShmCrash, a_producer_killed_at_a_random_moment_never_leaves_the_consumer_hanging) {
    test::ShmFixture f;
    std::mt19937 random(12345);
    std::uniform_int_distribution<int> delay_us(0, 3000);
    {
        STRATA_ASSERT_ASSIGN(seg, f.open(SegmentMode::create_only));
        for (int kill = 0; kill < kKillsPerPoint; ++kill) {
            STRATA_ASSERT_ASSIGN(in, seg.port("p", PortRole::consumer, {.slots = 4, .slot_bytes = 8}));
            Signal started;
            const pid_t victim = test::spawn([&] {
                auto s = f.open(SegmentMode::open_only, 0);
                STRATA_CHILD_CHECK_OK(s);
                auto out = s->port("p", PortRole::producer);
                STRATA_CHILD_CHECK_OK(out);
                started.notify();
                for (std::uint64_t i = 0;; ++i) {
                    auto loan = out->loan();
                    STRATA_CHILD_CHECK_OK(loan);
                    std::memcpy(loan->bytes().data(), &i, sizeof i);
                    STRATA_CHILD_CHECK_OK(out->commit(std::move(*loan)));
                }
            });
            ASSERT_TRUE(started.wait());
            std::this_thread::sleep_for(std::chrono::microseconds(delay_us(random)));
            kill_child(victim);
            const auto killed_at = Clock::now();
            // Messages arrive in order until the error; the error comes while waiting.
            std::uint64_t next = 0;
            for (;;) {
                auto sample = in.recv(kPeerWait);
                if (!sample) {
                    // peer_dead, also when the kill came while it held the port's lock (the port is repaired).
                    ASSERT_TRUE(fails_with(sample, Errc::peer_dead, {fmt::format("pid {}", victim)}));
                    break;
                }
                std::uint64_t value = 0;
                std::memcpy(&value, sample->bytes().data(), sizeof value);
                ASSERT_EQ(value, next++);
            }
            EXPECT_LT(Clock::now() - killed_at, kPeerWait / 2) << "kill " << kill;
            STRATA_ASSERT_OK(in.close());
            if (seg.remove_port("p").has_value()) {
                continue;
            }
            ADD_FAILURE() << "kill " << kill << ": the port could not be removed";
        }
    }
    expect_no_segment_left(f);
}

}  // namespace
}  // namespace strata
