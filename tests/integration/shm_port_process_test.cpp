// SPDX-License-Identifier: MIT
// Ports between processes: 1->1, 1->N and N->1, each ending with an exact
// account of every message; backpressure; handles through ports.
#include <cstring>
#include <map>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

#include "integration/shm_process.hpp"
#include "unit/shm_test_support.hpp"

namespace strata {
namespace {

using test::fails_with;

struct Message {
    std::uint32_t producer;
    std::uint32_t index;
    std::uint64_t check;
};

std::uint64_t check_of(std::uint32_t producer, std::uint32_t index) {
    return (static_cast<std::uint64_t>(producer) << 32U | index) * 0x9E3779B97F4A7C15ULL;
}

/// A producer child: opens the segment, sends `count` messages, closes.
/// `joined`, when given, is a pipe to tell the parent this producer joined.
int produce(const test::ShmFixture& f, std::uint32_t producer, std::uint32_t count, PortOptions options,
            int joined = -1) {
    auto seg = f.open(SegmentMode::open_only, 0);
    STRATA_CHILD_CHECK_OK(seg);
    auto port = seg->port("p", PortRole::producer, options);
    STRATA_CHILD_CHECK_OK(port);
    if (joined >= 0) {
        STRATA_CHILD_CHECK(::write(joined, "j", 1) == 1);
    }
    for (std::uint32_t i = 0; i < count; ++i) {
        auto loan = port->loan();
        STRATA_CHILD_CHECK_OK(loan);
        const Message m{producer, i, check_of(producer, i)};
        std::memcpy(loan->bytes().data(), &m, sizeof m);
        auto committed = port->commit(std::move(*loan), sizeof m);
        STRATA_CHILD_CHECK_OK(committed);
    }
    STRATA_CHILD_CHECK(port->messages() == count);
    return 0;
}

/// Receives until end of stream; returns per-producer counts, checking order and content.
struct Account {
    std::map<std::uint32_t, std::uint32_t> received;
    std::string error;
};

Account consume(Port& port) {  // NOLINT(readability-function-cognitive-complexity)
    Account account;
    for (;;) {
        auto sample = port.recv(std::chrono::seconds(20));
        if (!sample) {
            if (sample.error().code != Errc::not_found) {
                account.error = sample.error().what();
            }
            return account;
        }
        Message m{};
        if (sample->bytes().size() != sizeof m) {
            account.error = fmt::format("message of {} bytes", sample->bytes().size());
            return account;
        }
        std::memcpy(&m, sample->bytes().data(), sizeof m);
        std::uint32_t& next = account.received[m.producer];
        if (m.index != next || m.check != check_of(m.producer, m.index)) {
            account.error = fmt::format("producer {}: got message {} (check {:#x}), expected {}", m.producer, m.index,
                                        m.check, next);
            return account;
        }
        ++next;
    }
}

int consume_child(const test::ShmFixture& f, std::uint32_t producers, std::uint32_t count, PortSync sync) {
    auto seg = f.open(SegmentMode::open_only, 0);
    STRATA_CHILD_CHECK_OK(seg);
    auto port = seg->port("p", PortRole::consumer, {.sync = sync});
    STRATA_CHILD_CHECK_OK(port);
    Account account = consume(*port);
    if (!account.error.empty()) {
        std::fprintf(stderr, "consumer %u: %s\n", port->index(), account.error.c_str());
        return 1;
    }
    for (std::uint32_t p = 0; p < producers; ++p) {
        if (account.received.count(p) == 0 || account.received.at(p) != count) {
            std::fprintf(stderr, "consumer %u: producer %u: %u of %u messages\n", port->index(), p,
                         account.received.count(p) != 0 ? account.received.at(p) : 0, count);
            return 1;
        }
    }
    return 0;
}

class ShmPortProcesses : public ::testing::TestWithParam<PortSync> {};

TEST_P(ShmPortProcesses, one_producer_to_one_consumer_delivers_every_message_once_and_in_order) {
    test::ShmFixture f;
    STRATA_ASSERT_ASSIGN(seg, f.open(SegmentMode::create_only));
    const PortOptions shape{.slots = 4, .slot_bytes = sizeof(Message), .consumers = 1, .sync = GetParam()};
    STRATA_ASSERT_ASSIGN(in, seg.port("p", PortRole::consumer, shape));
    constexpr std::uint32_t kCount = 20000;
    const pid_t producer = test::spawn([&] { return produce(f, 0, kCount, shape); });
    Account account = consume(in);
    EXPECT_EQ(account.error, "");
    EXPECT_EQ(account.received[0], kCount);
    EXPECT_EQ(in.messages(), kCount);
    EXPECT_TRUE(test::wait_for_child(producer).succeeded());
}

TEST_P(ShmPortProcesses, one_producer_fans_out_every_message_to_each_of_three_consumers) {
    test::ShmFixture f;
    STRATA_ASSERT_ASSIGN(seg, f.open(SegmentMode::create_only));
    const PortOptions shape{.slots = 8, .slot_bytes = sizeof(Message), .consumers = 3, .sync = GetParam()};
    constexpr std::uint32_t kCount = 5000;
    std::vector<pid_t> children;
    {
        STRATA_ASSERT_ASSIGN(out, seg.port("p", PortRole::producer, shape));
        for (int c = 0; c < 3; ++c) {
            children.push_back(test::spawn([&] { return consume_child(f, 1, kCount, GetParam()); }));
        }
        for (std::uint32_t i = 0; i < kCount; ++i) {
            STRATA_ASSERT_ASSIGN(loan, out.loan(std::chrono::seconds(20)));
            const Message m{0, i, check_of(0, i)};
            std::memcpy(loan.bytes().data(), &m, sizeof m);
            STRATA_ASSERT_OK(out.commit(std::move(loan)));
        }
        EXPECT_EQ(out.messages(), kCount);
    }
    for (const pid_t child : children) {
        const auto status = test::wait_for_child(child);
        EXPECT_TRUE(status.succeeded()) << status.describe();
    }
}

TEST_P(ShmPortProcesses, three_producers_fan_in_to_one_consumer_that_gets_each_message_once) {
    test::ShmFixture f;
    STRATA_ASSERT_ASSIGN(seg, f.open(SegmentMode::create_only));
    const PortOptions shape{.slots = 4, .slot_bytes = sizeof(Message), .consumers = 1, .sync = GetParam()};
    STRATA_ASSERT_ASSIGN(in, seg.port("p", PortRole::consumer, shape));
    constexpr std::uint32_t kCount = 4000;
    // A gate producer holds the stream open until all three joined, so it
    // ends only when all three closed.
    STRATA_ASSERT_ASSIGN(gate, seg.port("p", PortRole::producer, shape));
    int joined[2];
    ASSERT_EQ(::pipe(joined), 0);
    std::vector<pid_t> children;
    for (std::uint32_t p = 1; p <= 3; ++p) {
        children.push_back(test::spawn([&, p] { return produce(f, p, kCount, shape, joined[1]); }));
    }
    char byte = 0;
    for (int p = 0; p < 3; ++p) {
        ASSERT_EQ(::read(joined[0], &byte, 1), 1);
    }
    ::close(joined[0]);
    ::close(joined[1]);
    STRATA_ASSERT_OK(gate.close());
    Account account = consume(in);
    EXPECT_EQ(account.error, "");
    for (std::uint32_t p = 1; p <= 3; ++p) {
        EXPECT_EQ(account.received[p], kCount) << "producer " << p;
    }
    EXPECT_EQ(in.messages(), 3 * kCount);
    for (const pid_t child : children) {
        EXPECT_TRUE(test::wait_for_child(child).succeeded());
    }
}

INSTANTIATE_TEST_SUITE_P(Sync, ShmPortProcesses, ::testing::Values(PortSync::blocking, PortSync::busy_poll),
                         [](const ::testing::TestParamInfo<PortSync>& param_info) {
                             return std::string(to_string(param_info.param));
                         });

TEST(ShmPortHandles, a_vector_sent_by_handle_is_read_in_place_by_the_consumer_process) {
    test::ShmFixture f;
    STRATA_ASSERT_ASSIGN(seg, f.open(SegmentMode::create_only, 64U << 20U));
    STRATA_ASSERT_ASSIGN(in, seg.port("p", PortRole::consumer));
    const pid_t producer = test::spawn([&] {
        auto s = f.open(SegmentMode::open_only, 0);
        STRATA_CHILD_CHECK_OK(s);
        auto out = s->port("p", PortRole::producer);
        STRATA_CHILD_CHECK_OK(out);
        for (int round = 0; round < 10; ++round) {
            auto v = s->make<strata::vector<double>>(std::size_t{100000}, static_cast<double>(round));
            STRATA_CHILD_CHECK_OK(v);
            auto sent = out->send(**v);
            STRATA_CHILD_CHECK_OK(sent);
        }
        return 0;
    });
    for (int round = 0; round < 10; ++round) {
        STRATA_ASSERT_ASSIGN(v, in.recv<strata::vector<double>>(std::chrono::seconds(20)));
        ASSERT_EQ(v->size(), 100000U);
        EXPECT_EQ(std::accumulate(v->begin(), v->end(), 0.0), 100000.0 * round);
        const auto* p = reinterpret_cast<const std::byte*>(v->data());
        EXPECT_TRUE(p >= seg.base() && p < seg.base() + seg.size());
        STRATA_ASSERT_OK(seg.destroy(v.object));
    }
    EXPECT_TRUE(fails_with(in.recv(std::chrono::seconds(20)), Errc::not_found, {"end of stream"}));
    EXPECT_TRUE(test::wait_for_child(producer).succeeded());
}

}  // namespace
}  // namespace strata
