// SPDX-License-Identifier: MIT
// SIGKILL a user of a segment at each critical point, many times over, and
// check that the survivor gets an error naming the dead user within one
// second, that the port or segment is recovered or marked broken, and that no
// segment is left behind.
#include <chrono>
#include <cstring>
#include <random>

#include <gtest/gtest.h>

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

constexpr int kKillsPerPoint = 50;

/// A pipe on which a child says "I am at the point where I am to be killed".
struct Signal {
    int fds[2] = {-1, -1};
    Signal() {
        if (::pipe(fds) != 0) {
            ADD_FAILURE() << "pipe failed";
        }
    }
    Signal(const Signal&) = delete;
    Signal& operator=(const Signal&) = delete;
    ~Signal() {
        ::close(fds[0]);
        ::close(fds[1]);
    }
    void notify() const { (void)!::write(fds[1], "x", 1); }
    bool wait() const {
        char c = 0;
        return ::read(fds[0], &c, 1) == 1;
    }
};

int g_signal_fd = -1;
std::atomic<shm_testing::CrashPoint> g_armed{};

void stop_here(shm_testing::CrashPoint point) {
    if (g_armed.load() == point) {
        (void)!::write(g_signal_fd, "x", 1);
        for (;;) {
            ::pause();
        }
    }
}

/// Kills `pid` and reaps it.
void kill_child(pid_t pid) {
    ::kill(pid, SIGKILL);
    test::wait_for_child(pid);
}

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

TEST(ShmCrash, a_user_killed_holding_the_port_lock_breaks_the_port_and_the_survivor_rebuilds_it) {
    test::ShmFixture f;
    {
        STRATA_ASSERT_ASSIGN(seg, f.open(SegmentMode::create_only));
        for (int kill = 0; kill < kKillsPerPoint; ++kill) {
            STRATA_ASSERT_ASSIGN(in, seg.port("p", PortRole::consumer));
            Signal at_point;
            const pid_t victim = test::spawn([&] {
                auto s = f.open(SegmentMode::open_only, 0);
                STRATA_CHILD_CHECK_OK(s);
                auto out = s->port("p", PortRole::producer);
                STRATA_CHILD_CHECK_OK(out);
                g_signal_fd = at_point.fds[1];
                shm_testing::set_crash_hook(&stop_here);
                g_armed = shm_testing::CrashPoint::port_lock_held;
                (void)out->loan();
                return 1;
            });
            ASSERT_TRUE(at_point.wait());
            kill_child(victim);
            const auto killed_at = Clock::now();
            const auto error = in.recv(kPeerWait);
            EXPECT_LT(Clock::now() - killed_at, kPeerWait / 2) << "kill " << kill;
            ASSERT_TRUE(fails_with(error, Errc::broken, {"port 'p' is broken", "died holding its lock", "pid"}))
                << "kill " << kill;
            EXPECT_TRUE(fails_with(in.recv(1ms), Errc::broken, {"broken"})) << "broken stays broken";
            STRATA_ASSERT_OK(in.close());
            STRATA_ASSERT_OK(seg.remove_port("p"));
        }
        STRATA_ASSERT_ASSIGN(out, seg.port("p", PortRole::producer));
        STRATA_ASSERT_ASSIGN(in, seg.port("p", PortRole::consumer));
        STRATA_ASSERT_ASSIGN(n, seg.make<int>(3));
        STRATA_ASSERT_OK(out.send(*n));
        STRATA_ASSERT_ASSIGN(got, in.recv<int>(1s));
        EXPECT_EQ(*got, 3);
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
            g_signal_fd = at_point.fds[1];
            shm_testing::set_crash_hook(&stop_here);
            g_armed = shm_testing::CrashPoint::allocator_lock_held;
            (void)s->make<strata::vector<int>>(std::size_t{1000});
            return 1;
        });
        ASSERT_TRUE(at_point.wait());
        kill_child(victim);
        const auto killed_at = Clock::now();
        const auto error = seg.make<int>(2);
        EXPECT_LT(Clock::now() - killed_at, kPeerWait / 2) << "kill " << kill;
        ASSERT_TRUE(fails_with(error, Errc::broken, {f.name, "is broken", "died holding", "pid"})) << "kill " << kill;
        EXPECT_NE(seg.broken_reason(), "");
        EXPECT_TRUE(fails_with(seg.find<int>("x"), Errc::broken, {"broken"}));
        EXPECT_TRUE(fails_with(seg.load<int>(Handle{seg.id(), 1, 0, 0}), Errc::broken, {"broken"}));
        (void)before;
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
                    // peer_dead, or broken when the kill came while it held the port's lock.
                    ASSERT_TRUE(sample.error().code == Errc::peer_dead || sample.error().code == Errc::broken)
                        << sample.error().what();
                    EXPECT_NE(sample.error().message.find("pid"), std::string::npos) << sample.error().what();
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
