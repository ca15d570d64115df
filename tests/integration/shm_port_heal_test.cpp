// SPDX-License-Identifier: MIT
// A user SIGKILLed while it holds a port's lock: the survivors take the lock
// over, repair the port and carry on (docs/shm.md, "Crash safety"). Each test
// kills at a named point between two steps of a critical section
// (strata/shm/testing.hpp, src/shm/port_layout.hpp), then checks that the
// error names the dead user and the repair, that the port is not broken, and
// that every committed message arrives exactly once and in order.
#include <cstring>
#include <thread>

#include <gtest/gtest.h>

#include "integration/shm_crash_points.hpp"
#include "integration/shm_process.hpp"
#include "unit/shm_test_support.hpp"

namespace strata {
namespace {

using namespace std::chrono_literals;
using shm_testing::CrashPoint;
using test::fails_with;

constexpr int kKills = 20;

std::uint64_t value_of(const Sample& sample) {
    std::uint64_t value = 0;
    std::memcpy(&value, sample.bytes().data(), sizeof value);
    return value;
}

/// A user of port "p" in a child: its segment and its port (closed first).
struct User {
    Segment seg;
    Port port;
};

Result<User> join(const test::ShmFixture& f, PortRole role, const PortOptions& shape = {}) {
    auto seg = f.open(SegmentMode::open_only, 0);
    if (!seg) {
        return std::unexpected(seg.error());
    }
    auto port = seg->port("p", role, shape);
    if (!port) {
        return std::unexpected(port.error());
    }
    return User{std::move(*seg), std::move(*port)};
}

/// Commits messages [first, first + count), each holding its number.
Result<void> produce(Port& out, std::uint64_t first, std::uint64_t count) {
    for (std::uint64_t i = first; i < first + count; ++i) {
        auto loan = out.loan(5s);
        if (!loan) {
            return std::unexpected(loan.error());
        }
        std::memcpy(loan->bytes().data(), &i, sizeof i);
        if (auto ok = out.commit(std::move(*loan)); !ok) {
            return ok;
        }
    }
    return {};
}

/// The parent's producer: like produce(), but a peer_dead (the death of a
/// user, told once) is taken and the message sent again; its text returned.
std::string produce_through_death(Port& out, std::uint64_t first, std::uint64_t count) {
    std::string told;
    for (int attempt = 0; attempt < 2; ++attempt) {
        auto sent = produce(out, first, count);
        if (sent) {
            return told;
        }
        EXPECT_EQ(sent.error().code, Errc::peer_dead) << sent.error().what();
        told = sent.error().message;
    }
    ADD_FAILURE() << "two errors in a row: " << told;
    return told;
}

/// Receives `count` messages numbered from `next` (advanced) and, before,
/// between or after them, exactly one peer_dead naming `victim`, the port's
/// lock and every text of `mentions`.
void expect_messages_and_one_death(Port& in, std::uint64_t& next, std::uint64_t count, pid_t victim,
                                   std::initializer_list<std::string> mentions, const std::string& context) {
    const std::uint64_t end = next + count;
    bool told = false;
    while (next < end || !told) {
        auto sample = in.recv(5s);
        if (!sample) {
            ASSERT_FALSE(told) << context << ": a second error: " << sample.error().what();
            ASSERT_TRUE(fails_with(sample, Errc::peer_dead, {fmt::format("pid {}", victim), "holding the port's lock"}))
                << context;
            for (const std::string& text : mentions) {
                EXPECT_NE(sample.error().message.find(text), std::string::npos)
                    << context << ": does not name \"" << text << "\": " << sample.error().what();
            }
            told = true;
            continue;
        }
        ASSERT_LT(next, end) << context << ": a message beyond those committed: " << value_of(*sample);
        EXPECT_EQ(value_of(*sample), next++) << context;
    }
}

/// A producer's loans after a consumer's death: the death is told once, on
/// the first loan or the next, naming `victim` and `mentions`; loans go on.
void expect_loans_and_one_death(Port& out, pid_t victim, std::initializer_list<std::string> mentions,
                                const std::string& context) {
    bool told = false;
    for (int i = 0; i < 3; ++i) {
        auto loan = out.loan(5s);
        if (!loan) {
            ASSERT_FALSE(told) << context << ": a second error: " << loan.error().what();
            ASSERT_TRUE(fails_with(loan, Errc::peer_dead, {fmt::format("pid {}", victim), "holding the port's lock"}))
                << context;
            for (const std::string& text : mentions) {
                EXPECT_NE(loan.error().message.find(text), std::string::npos)
                    << context << ": does not name \"" << text << "\": " << loan.error().what();
            }
            told = true;
        }
    }
    EXPECT_TRUE(told) << context << ": the death was never told";
}

class ShmPortHeal : public ::testing::Test {
protected:
    test::ShmFixture f;
    std::optional<Segment> seg;

    void SetUp() override {
        auto opened = f.open(SegmentMode::create_only);
        ASSERT_TRUE(opened.has_value()) << opened.error().what();
        seg.emplace(std::move(*opened));
    }
    void TearDown() override {
        seg.reset();
        EXPECT_TRUE(f.dir.entries().empty()) << "a segment file was left behind";
    }
};

TEST_F(ShmPortHeal, a_producer_killed_holding_the_port_lock_is_named_and_the_port_stays_usable) {
    STRATA_ASSERT_ASSIGN(in, seg->port("p", PortRole::consumer, {.slots = 4, .slot_bytes = 8}));
    std::uint64_t next = 0;
    for (int kill = 0; kill < kKills; ++kill) {
        const auto before = static_cast<std::uint64_t>(kill % 3);  // committed before the fatal loan
        test::Signal at_point;
        const pid_t victim = test::spawn([&] {
            auto user = join(f, PortRole::producer);
            STRATA_CHILD_CHECK_OK(user);
            auto sent = produce(user->port, next, before);
            STRATA_CHILD_CHECK_OK(sent);
            test::arm(at_point, CrashPoint::port_lock_held);
            (void)user->port.loan();
            return 1;
        });
        ASSERT_TRUE(at_point.wait());
        test::kill_child(victim);
        const std::string context = fmt::format("kill {}", kill);
        expect_messages_and_one_death(in, next, before, victim, {"nothing was half done"}, context);
        // The port goes on: the next producer's messages arrive, none twice.
        test::Signal joined;
        const pid_t producer = test::spawn([&] {
            auto user = join(f, PortRole::producer);
            STRATA_CHILD_CHECK_OK(user);
            joined.notify();
            auto sent = produce(user->port, next, 2);
            STRATA_CHILD_CHECK_OK(sent);
            return 0;
        });
        ASSERT_TRUE(joined.wait());
        for (int i = 0; i < 2; ++i) {
            STRATA_ASSERT_ASSIGN(sample, in.recv(5s));
            EXPECT_EQ(value_of(sample), next++) << context;
        }
        EXPECT_TRUE(test::wait_for_child(producer).succeeded());
    }
}

TEST_F(ShmPortHeal, a_producer_killed_after_claiming_a_slot_has_its_loan_undone_and_no_sequence_skipped) {
    STRATA_ASSERT_ASSIGN(in, seg->port("p", PortRole::consumer, {.slots = 4, .slot_bytes = 8}));
    STRATA_ASSERT_ASSIGN(out, seg->port("p", PortRole::producer));
    std::uint64_t next = 0;  // every message's number is its sequence: none may be skipped
    for (int kill = 0; kill < kKills; ++kill) {
        const auto before = static_cast<std::uint64_t>(kill % 3);
        test::Signal at_point;
        const pid_t victim = test::spawn([&] {
            auto user = join(f, PortRole::producer);
            STRATA_CHILD_CHECK_OK(user);
            auto sent = produce(user->port, next, before);
            STRATA_CHILD_CHECK_OK(sent);
            test::arm(at_point, CrashPoint::port_loan_claimed);
            (void)user->port.loan();
            return 1;
        });
        ASSERT_TRUE(at_point.wait());
        test::kill_child(victim);
        const std::string context = fmt::format("kill {}", kill);
        expect_messages_and_one_death(in, next, before, victim,
                                      {fmt::format("loan of message {} undone", next + before), "no message was lost"},
                                      context);
        (void)produce_through_death(out, next, 1);
        STRATA_ASSERT_ASSIGN(sample, in.recv(5s));
        EXPECT_EQ(sample.sequence(), next) << context << ": the undone loan's sequence is reused";
        EXPECT_EQ(value_of(sample), next++) << context;
    }
}

TEST_F(ShmPortHeal, a_producer_killed_inside_commit_after_publishing_has_the_message_delivered_once) {
    STRATA_ASSERT_ASSIGN(in, seg->port("p", PortRole::consumer, {.slots = 4, .slot_bytes = 8}));
    std::uint64_t next = 0;
    for (int kill = 0; kill < kKills; ++kill) {
        const auto before = static_cast<std::uint64_t>(kill % 3);
        test::Signal at_point;
        const pid_t victim = test::spawn([&] {
            auto user = join(f, PortRole::producer);
            STRATA_CHILD_CHECK_OK(user);
            auto sent = produce(user->port, next, before);
            STRATA_CHILD_CHECK_OK(sent);
            auto loan = user->port.loan();
            STRATA_CHILD_CHECK_OK(loan);
            const std::uint64_t last = next + before;
            std::memcpy(loan->bytes().data(), &last, sizeof last);
            test::arm(at_point, CrashPoint::port_commit_published);
            (void)user->port.commit(std::move(*loan));
            return 1;
        });
        ASSERT_TRUE(at_point.wait());
        test::kill_child(victim);
        // The message whose commit was cut short is delivered, and only once.
        expect_messages_and_one_death(in, next, before + 1, victim,
                                      {fmt::format("commit of message {} completed", next + before)},
                                      fmt::format("kill {}", kill));
    }
}

TEST_F(ShmPortHeal, a_consumer_killed_while_releasing_the_last_hold_on_a_slot_has_the_slot_freed) {
    STRATA_ASSERT_ASSIGN(out, seg->port("p", PortRole::producer, {.slots = 1, .slot_bytes = 8}));
    for (int kill = 0; kill < kKills; ++kill) {
        test::Signal joined;
        test::Signal at_point;
        const pid_t victim = test::spawn([&] {
            auto user = join(f, PortRole::consumer);
            STRATA_CHILD_CHECK_OK(user);
            joined.notify();
            auto sample = user->port.recv(5s);
            STRATA_CHILD_CHECK_OK(sample);
            test::arm(at_point, CrashPoint::port_holder_dropped);
            (void)user->port.release(std::move(*sample));
            return 1;
        });
        ASSERT_TRUE(joined.wait());
        ASSERT_TRUE(produce(out, static_cast<std::uint64_t>(kill), 1).has_value());
        ASSERT_TRUE(at_point.wait());
        test::kill_child(victim);
        // The one slot is freed by the repair, so loans go on.
        expect_loans_and_one_death(out, victim, {"consumer 0", "freed"}, fmt::format("kill {}", kill));
    }
}

TEST_F(ShmPortHeal, a_producer_killed_while_closing_has_its_loan_dropped_and_is_named) {
    STRATA_ASSERT_ASSIGN(in, seg->port("p", PortRole::consumer, {.slots = 4, .slot_bytes = 8}));
    STRATA_ASSERT_ASSIGN(out, seg->port("p", PortRole::producer));
    std::uint64_t next = 0;
    for (int kill = 0; kill < kKills; ++kill) {
        test::Signal at_point;
        const pid_t victim = test::spawn([&] {
            auto user = join(f, PortRole::producer);
            STRATA_CHILD_CHECK_OK(user);
            auto sent = produce(user->port, next, 1);
            STRATA_CHILD_CHECK_OK(sent);
            auto held = user->port.loan();  // never committed
            STRATA_CHILD_CHECK_OK(held);
            test::arm(at_point, CrashPoint::port_peer_leaving);
            (void)user->port.close();
            return 1;
        });
        ASSERT_TRUE(at_point.wait());
        test::kill_child(victim);
        const std::string context = fmt::format("kill {}", kill);
        expect_messages_and_one_death(in, next, 1, victim, {"closing", "active producers 2 -> 1", "is dropped"},
                                      context);
        // The dropped message is skipped: the parent's next message follows.
        (void)produce_through_death(out, next, 1);
        STRATA_ASSERT_ASSIGN(sample, in.recv(5s));
        EXPECT_EQ(value_of(sample), next++) << context;
    }
}

TEST_F(ShmPortHeal, a_consumer_killed_while_closing_has_its_claims_dropped) {
    STRATA_ASSERT_ASSIGN(out, seg->port("p", PortRole::producer, {.slots = 1, .slot_bytes = 8}));
    for (int kill = 0; kill < kKills; ++kill) {
        test::Signal joined;
        test::Signal at_point;
        const pid_t victim = test::spawn([&] {
            auto user = join(f, PortRole::consumer);
            STRATA_CHILD_CHECK_OK(user);
            joined.notify();
            auto held = user->port.recv(5s);  // never released
            STRATA_CHILD_CHECK_OK(held);
            test::arm(at_point, CrashPoint::port_peer_leaving);
            (void)user->port.close();
            return 1;
        });
        ASSERT_TRUE(joined.wait());
        ASSERT_TRUE(produce(out, static_cast<std::uint64_t>(kill), 1).has_value());
        ASSERT_TRUE(at_point.wait());
        test::kill_child(victim);
        expect_loans_and_one_death(out, victim, {"consumer 0", "closing", "claim on message", "freed"},
                                   fmt::format("kill {}", kill));
    }
}

TEST_F(ShmPortHeal, a_producer_killed_while_joining_leaves_the_producer_count_right) {
    STRATA_ASSERT_ASSIGN(in, seg->port("p", PortRole::consumer, {.slots = 4, .slot_bytes = 8}));
    std::uint64_t next = 0;
    for (int kill = 0; kill < kKills; ++kill) {
        STRATA_ASSERT_ASSIGN(out, seg->port("p", PortRole::producer));
        test::Signal at_point;
        const pid_t victim = test::spawn([&] {
            auto s = f.open(SegmentMode::open_only, 0);
            STRATA_CHILD_CHECK_OK(s);
            test::arm(at_point, CrashPoint::port_peer_joining);
            (void)s->port("p", PortRole::producer);
            return 1;
        });
        ASSERT_TRUE(at_point.wait());
        test::kill_child(victim);
        const std::string context = fmt::format("kill {}", kill);
        (void)produce_through_death(out, next, 2);
        expect_messages_and_one_death(in, next, 2, victim, {"active producers 1 -> 2", "no message was lost"}, context);
        // With the count right, the stream ends when the parent's producer closes.
        STRATA_ASSERT_OK(out.close());
        const auto end = in.recv(5s);
        ASSERT_FALSE(end.has_value()) << context;
        EXPECT_TRUE(end.error().code == Errc::not_found ||
                    (end.error().code == Errc::peer_dead &&
                     end.error().message.find("every producer has gone") != std::string::npos))
            << context << ": " << end.error().what();
    }
}

TEST_F(ShmPortHeal, a_survivor_killed_while_recovering_a_dead_consumer_is_recovered_in_turn_and_both_are_named) {
    STRATA_ASSERT_ASSIGN(in, seg->port("p", PortRole::consumer, {.slots = 4, .slot_bytes = 8, .consumers = 2}));
    std::uint64_t next = 0;
    for (int kill = 0; kill < kKills / 4; ++kill) {
        // The producer joins first (else the consumer would find the stream ended), then the
        // consumer (a replacement starts with the next message), then the producer sends.
        test::Signal producer_joined;
        test::Signal send;
        test::Signal go;
        test::Signal recovering;
        const pid_t producer = test::spawn([&] {
            auto user = join(f, PortRole::producer);
            STRATA_CHILD_CHECK_OK(user);
            producer_joined.notify();
            STRATA_CHILD_CHECK(send.wait());
            auto sent = produce(user->port, next, 1);
            STRATA_CHILD_CHECK_OK(sent);
            STRATA_CHILD_CHECK(go.wait());
            // Sends until its liveness check finds the dead consumer and stops it mid-recovery.
            test::arm(recovering, CrashPoint::port_peer_recovering);
            for (std::uint64_t i = next + 1;; ++i) {
                auto more = produce(user->port, i, 1);
                STRATA_CHILD_CHECK_OK(more);
                std::this_thread::sleep_for(5ms);
            }
        });
        ASSERT_TRUE(producer_joined.wait());
        test::Signal holding;
        const pid_t consumer = test::spawn([&] {
            auto user = join(f, PortRole::consumer);
            STRATA_CHILD_CHECK_OK(user);
            send.notify();
            auto held = user->port.recv(5s);
            STRATA_CHILD_CHECK_OK(held);
            holding.notify();
            for (;;) {
                ::pause();
            }
        });
        ASSERT_TRUE(holding.wait());
        test::kill_child(consumer);
        go.notify();
        ASSERT_TRUE(recovering.wait());
        test::kill_child(producer);
        // Both deaths come in one error; the messages come in order, none twice, then the end.
        const std::string context = fmt::format("kill {}", kill);
        bool told = false;
        for (;;) {
            auto sample = in.recv(5s);
            if (sample) {
                EXPECT_EQ(value_of(*sample), next++) << context;
                continue;
            }
            if (!told) {
                ASSERT_TRUE(fails_with(sample, Errc::peer_dead,
                                       {fmt::format("pid {}", consumer), fmt::format("pid {}", producer),
                                        "holding the port's lock", "; then "}))
                    << context;
                told = true;
                continue;
            }
            ASSERT_TRUE(fails_with(sample, Errc::peer_dead, {"every producer has gone"})) << context;
            break;
        }
    }
}

}  // namespace
}  // namespace strata
