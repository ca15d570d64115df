// SPDX-License-Identifier: MIT
// Port options, roles, backpressure, loan/commit/release and bad input, in one process.
#include <cstring>

#include <gtest/gtest.h>

#include "unit/shm_test_support.hpp"

namespace strata {
namespace {

using namespace std::chrono_literals;
using test::fails_with;

class ShmPort : public ::testing::Test {
protected:
    void SetUp() override {
        auto s = fixture.open(SegmentMode::create_only);
        ASSERT_TRUE(s.has_value()) << s.error().what();
        seg.emplace(std::move(*s));
    }
    test::ShmFixture fixture;
    std::optional<Segment> seg;
};

TEST_F(ShmPort, a_committed_loan_reaches_the_consumer_with_its_bytes_and_handle) {
    STRATA_ASSERT_ASSIGN(out, seg->port("p", PortRole::producer, {.slots = 2, .slot_bytes = 64}));
    STRATA_ASSERT_ASSIGN(in, seg->port("p", PortRole::consumer));
    EXPECT_EQ(in.shape().slot_bytes, 64U) << "a later user adopts the shape";
    STRATA_ASSERT_ASSIGN(n, seg->make<int>(5));
    STRATA_ASSERT_ASSIGN(h, seg->save(*n));
    STRATA_ASSERT_ASSIGN(loan, out.loan());
    EXPECT_EQ(loan.bytes().size(), 64U);
    std::memcpy(loan.bytes().data(), "hello", 5);
    loan.set_handle(h);
    STRATA_ASSERT_OK(out.commit(std::move(loan), 5));
    STRATA_ASSERT_ASSIGN(sample, in.recv(1s));
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(sample.bytes().data()), sample.bytes().size()), "hello");
    EXPECT_EQ(sample.handle(), h);
    STRATA_ASSERT_ASSIGN(got, sample.get<int>());
    EXPECT_EQ(*got, 5);
    EXPECT_TRUE(fails_with(sample.get<double>(), Errc::invalid_argument, {"'int'"}));
    STRATA_ASSERT_OK(in.release(std::move(sample)));
}

TEST_F(ShmPort, a_producer_waits_while_every_slot_is_unreleased_and_continues_after_release) {
    STRATA_ASSERT_ASSIGN(out, seg->port("p", PortRole::producer, {.slots = 2}));
    STRATA_ASSERT_ASSIGN(in, seg->port("p", PortRole::consumer));
    STRATA_ASSERT_ASSIGN(n, seg->make<int>(1));
    STRATA_ASSERT_OK(out.send(*n));
    STRATA_ASSERT_OK(out.send(*n));
    EXPECT_TRUE(fails_with(out.loan(50ms), Errc::timeout, {"every slot is in use"}));
    STRATA_ASSERT_ASSIGN(first, in.recv(1s));
    EXPECT_TRUE(fails_with(out.loan(50ms), Errc::timeout, {"p"})) << "received is not released";
    STRATA_ASSERT_OK(in.release(std::move(first)));
    STRATA_EXPECT_OK(out.loan(1s));
}

TEST_F(ShmPort, messages_wait_for_a_consumer_that_has_not_joined_yet) {
    STRATA_ASSERT_ASSIGN(out, seg->port("p", PortRole::producer));
    STRATA_ASSERT_ASSIGN(n, seg->make<int>(3));
    STRATA_ASSERT_OK(out.send(*n));
    STRATA_ASSERT_ASSIGN(in, seg->port("p", PortRole::consumer));
    STRATA_ASSERT_ASSIGN(got, in.recv<int>(1s));
    EXPECT_EQ(*got, 3);
}

TEST_F(ShmPort, a_dropped_loan_is_skipped_by_the_consumers) {
    STRATA_ASSERT_ASSIGN(out, seg->port("p", PortRole::producer, {.slot_bytes = 8}));
    STRATA_ASSERT_ASSIGN(in, seg->port("p", PortRole::consumer));
    { STRATA_ASSERT_ASSIGN(dropped, out.loan()); }
    STRATA_ASSERT_ASSIGN(loan, out.loan());
    const std::uint64_t sequence = loan.sequence();
    STRATA_ASSERT_OK(out.commit(std::move(loan)));
    STRATA_ASSERT_ASSIGN(sample, in.recv(1s));
    EXPECT_EQ(sample.sequence(), sequence);
    EXPECT_EQ(out.messages(), 1U);
}

TEST_F(ShmPort, recv_times_out_when_nothing_arrives) {
    STRATA_ASSERT_ASSIGN(out, seg->port("p", PortRole::producer));
    STRATA_ASSERT_ASSIGN(in, seg->port("p", PortRole::consumer));
    const auto start = std::chrono::steady_clock::now();
    EXPECT_TRUE(fails_with(in.recv(30ms), Errc::timeout, {"Port::recv", "nothing arrived"}));
    // A hang bound: the 30 ms wait ends, however late load lets this thread run again.
    EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

TEST_F(ShmPort, recv_after_every_producer_closed_is_end_of_stream) {
    STRATA_ASSERT_ASSIGN(out, seg->port("p", PortRole::producer));
    STRATA_ASSERT_ASSIGN(in, seg->port("p", PortRole::consumer));
    STRATA_ASSERT_ASSIGN(n, seg->make<int>(3));
    STRATA_ASSERT_OK(out.send(*n));
    STRATA_ASSERT_OK(out.close());
    STRATA_EXPECT_OK(in.recv(1s));
    EXPECT_TRUE(fails_with(in.recv(1s), Errc::not_found, {"end of stream"}));
}

TEST_F(ShmPort, operations_of_the_other_role_are_invalid_arguments) {
    STRATA_ASSERT_ASSIGN(out, seg->port("p", PortRole::producer));
    STRATA_ASSERT_ASSIGN(in, seg->port("p", PortRole::consumer));
    EXPECT_TRUE(fails_with(out.recv(1ms), Errc::invalid_argument, {"producer", "consumer"}));
    EXPECT_TRUE(fails_with(in.loan(1ms), Errc::invalid_argument, {"consumer", "producer"}));
}

TEST_F(ShmPort, bad_options_are_invalid_arguments_naming_the_field) {
    EXPECT_TRUE(fails_with(seg->port("p", PortRole::producer, {.slots = 0}), Errc::invalid_argument, {"slots=0"}));
    EXPECT_TRUE(
        fails_with(seg->port("p", PortRole::producer, {.slots = 5000}), Errc::invalid_argument, {"slots=5000"}));
    EXPECT_TRUE(
        fails_with(seg->port("p", PortRole::producer, {.consumers = 0}), Errc::invalid_argument, {"consumers=0"}));
    EXPECT_TRUE(
        fails_with(seg->port("p", PortRole::producer, {.consumers = 65}), Errc::invalid_argument, {"consumers=65"}));
    EXPECT_TRUE(fails_with(seg->port("p", PortRole::producer, {.slot_bytes = 2ULL << 30U}), Errc::invalid_argument,
                           {"slot_bytes="}));
    EXPECT_TRUE(fails_with(seg->port("", PortRole::producer), Errc::invalid_argument, {"name=''"}));
    EXPECT_TRUE(fails_with(seg->port("p", static_cast<PortRole>(9)), Errc::invalid_argument, {"role=9"}));
    EXPECT_TRUE(fails_with(seg->port("p", PortRole::producer, {.sync = static_cast<PortSync>(9)}),
                           Errc::invalid_argument, {"sync=9"}));
}

TEST_F(ShmPort, sync_mpi_without_libstrata_mpi_is_unsupported_and_names_the_library) {
    EXPECT_TRUE(fails_with(seg->port("p", PortRole::producer, {.sync = PortSync::mpi}), Errc::unsupported,
                           {"sync=mpi", "libstrata-mpi"}));
    EXPECT_TRUE(fails_with(seg->port("p", PortRole::consumer, {.sync = PortSync::mpi}), Errc::unsupported,
                           {"sync=mpi", "libstrata-mpi"}));
    // Nothing was left behind: the name is free for a port that waits through the segment.
    STRATA_ASSERT_ASSIGN(out, seg->port("p", PortRole::producer, {.sync = PortSync::busy_poll}));
    EXPECT_EQ(out.sync(), PortSync::busy_poll);
}

TEST_F(ShmPort, a_shape_that_differs_from_the_existing_port_is_an_invalid_argument) {
    STRATA_ASSERT_ASSIGN(out, seg->port("p", PortRole::producer, {.slots = 4}));
    EXPECT_TRUE(
        fails_with(seg->port("p", PortRole::consumer, {.slots = 8}), Errc::invalid_argument, {"slots=8", "4 slots"}));
}

TEST_F(ShmPort, more_consumers_than_the_fan_out_is_busy) {
    STRATA_ASSERT_ASSIGN(a, seg->port("p", PortRole::consumer, {.consumers = 2}));
    STRATA_ASSERT_ASSIGN(b, seg->port("p", PortRole::consumer));
    EXPECT_TRUE(fails_with(seg->port("p", PortRole::consumer), Errc::busy, {"2 consumers"}));
    STRATA_ASSERT_OK(b.close());
    STRATA_EXPECT_OK(seg->port("p", PortRole::consumer)) << "a closed consumer's place is free again";
}

TEST_F(ShmPort, committing_more_bytes_than_a_slot_holds_is_an_invalid_argument) {
    STRATA_ASSERT_ASSIGN(out, seg->port("p", PortRole::producer, {.slot_bytes = 16}));
    STRATA_ASSERT_ASSIGN(loan, out.loan());
    EXPECT_TRUE(fails_with(out.commit(std::move(loan), 17), Errc::invalid_argument, {"used=17", "16 bytes"}));
}

TEST_F(ShmPort, sending_an_object_of_another_segment_fails) {
    STRATA_ASSERT_ASSIGN(out, seg->port("p", PortRole::producer));
    int local = 0;
    EXPECT_TRUE(fails_with(out.send(local), Errc::invalid_argument, {"not inside segment"}));
}

TEST_F(ShmPort, remove_port_refuses_while_a_user_is_attached_and_frees_it_after) {
    {
        STRATA_ASSERT_ASSIGN(out, seg->port("p", PortRole::producer));
        EXPECT_TRUE(fails_with(seg->remove_port("p"), Errc::busy, {"still used"}));
    }
    STRATA_ASSERT_OK(seg->remove_port("p"));
    EXPECT_TRUE(fails_with(seg->remove_port("p"), Errc::not_found, {"strata.port.p"}));
}

TEST_F(ShmPort, roles_and_syncs_parse_and_print) {
    STRATA_ASSERT_ASSIGN(role, parse_port_role("consumer"));
    EXPECT_EQ(role, PortRole::consumer);
    STRATA_ASSERT_ASSIGN(sync, parse_port_sync("busy_poll"));
    EXPECT_EQ(sync, PortSync::busy_poll);
    EXPECT_TRUE(fails_with(parse_port_sync("spin"), Errc::invalid_argument, {"sync=spin"}));
}

}  // namespace
}  // namespace strata
