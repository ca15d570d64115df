// SPDX-License-Identifier: MIT
// The protocol's guarded cases, step by step: holds that defer an inv or a
// recall, publish on release, a write-back crossing a recall, an eviction
// during an invalidation, and requests that do not fit the state.
#include <gtest/gtest.h>

#include "dsm/protocol_table.hpp"

namespace strata::dsm::proto {
namespace {

Message op(Msg kind, ClientId self) {
    return Message{.kind = kind, .client = self};
}

TEST(DsmClientProtocol, an_inv_that_arrives_while_a_read_is_held_is_answered_at_release) {
    ClientEntry sut{.state = CState::S, .version = 1, .has_bytes = true};
    ASSERT_TRUE(client_receive(sut, op(Msg::op_acquire_read, 0)).hit);
    const Step inv = client_receive(sut, Message{.kind = Msg::inv, .client = 0});
    ASSERT_TRUE(inv.ok);
    EXPECT_TRUE(inv.out.empty());
    EXPECT_EQ(sut.state, CState::S);
    const Step rel = client_receive(sut, op(Msg::op_release_read, 0));
    ASSERT_EQ(rel.out.size(), 1U);
    EXPECT_EQ(rel.out[0].kind, Msg::inv_ack);
    EXPECT_EQ(sut.state, CState::I);
}

TEST(DsmClientProtocol, a_recall_while_a_write_is_held_is_answered_with_the_released_data) {
    ClientEntry sut{.state = CState::M, .version = 4, .has_bytes = true};
    ASSERT_TRUE(client_receive(sut, op(Msg::op_acquire_write, 0)).hit);
    EXPECT_TRUE(client_receive(sut, Message{.kind = Msg::recall, .client = 0, .grant = CState::I}).out.empty());
    const Step rel = client_receive(sut, op(Msg::op_release_write, 0));
    ASSERT_EQ(rel.out.size(), 1U);
    EXPECT_EQ(rel.out[0].kind, Msg::recall_ack);
    EXPECT_TRUE(rel.out[0].has_data);
    EXPECT_EQ(rel.out[0].version, 5U);
    EXPECT_FALSE(rel.out[0].kept_copy);
    EXPECT_EQ(sut.state, CState::I);
}

TEST(DsmClientProtocol, a_release_of_a_published_chunk_sends_the_data_and_keeps_it_exclusive) {
    ClientEntry sut;
    ASSERT_TRUE(client_receive(sut, op(Msg::op_acquire_write, 2)).wait);
    const Step g = client_receive(
        sut,
        Message{.kind = Msg::grant, .client = 2, .version = 7, .has_data = true, .grant = CState::M, .publish = true});
    ASSERT_TRUE(g.completed);
    EXPECT_TRUE(g.install);
    const Step rel = client_receive(sut, op(Msg::op_release_write, 2));
    ASSERT_EQ(rel.out.size(), 1U);
    EXPECT_EQ(rel.out[0].kind, Msg::publish);
    EXPECT_EQ(rel.out[0].version, 8U);
    EXPECT_EQ(sut.state, CState::E);
    EXPECT_TRUE(client_receive(sut, op(Msg::op_acquire_write, 2)).hit);
}

TEST(DsmClientProtocol, a_grant_without_data_is_refused_when_the_cached_bytes_are_of_another_version) {
    ClientEntry sut{.state = CState::I, .version = 2, .has_bytes = true};
    ASSERT_TRUE(client_receive(sut, op(Msg::op_acquire_read, 1)).wait);
    const Step g = client_receive(sut, Message{.kind = Msg::grant, .client = 1, .version = 3, .grant = CState::S});
    EXPECT_FALSE(g.ok);
}

TEST(DsmClientProtocol, release_without_acquire_and_a_second_acquire_while_waiting_are_refused) {
    ClientEntry sut{.state = CState::S, .version = 1, .has_bytes = true};
    EXPECT_FALSE(client_receive(sut, op(Msg::op_release_read, 0)).ok);
    ClientEntry waiting;
    ASSERT_TRUE(client_receive(waiting, op(Msg::op_acquire_read, 0)).wait);
    EXPECT_FALSE(client_receive(waiting, op(Msg::op_acquire_read, 0)).ok);
    EXPECT_FALSE(client_receive(waiting, op(Msg::op_evict, 0)).ok);
}

TEST(DsmHomeProtocol, a_write_back_crossing_a_recall_is_kept_and_the_empty_recall_answer_grants) {
    HomeEntry sut{.state = DState::EM, .owner = 0, .version = 2};
    Step r = home_receive(sut, Message{.kind = Msg::write_req, .client = 1});
    ASSERT_EQ(sut.state, DState::wait_recall);
    // The owner evicted (write-back v3) before the recall reached it.
    Step wb = home_receive(sut, Message{.kind = Msg::write_back, .client = 0, .version = 3, .has_data = true});
    EXPECT_TRUE(wb.store);
    EXPECT_EQ(sut.version, 3U);
    // It then answers the recall from state I: no data, no copy kept.
    Step ack = home_receive(sut, Message{.kind = Msg::recall_ack, .client = 0, .version = 0});
    ASSERT_TRUE(ack.ok) << ack.error;
    EXPECT_FALSE(ack.store);
    ASSERT_EQ(ack.out.size(), 1U);
    EXPECT_EQ(ack.out[0].kind, Msg::grant);
    EXPECT_EQ(ack.out[0].version, 3U);
    EXPECT_TRUE(ack.out[0].has_data);
    EXPECT_EQ(sut.state, DState::EM);
    EXPECT_EQ(sut.owner, 1);
}

TEST(DsmHomeProtocol, an_eviction_during_an_invalidation_still_waits_for_the_ack) {
    HomeEntry sut{.state = DState::S, .sharers = 0b110, .version = 5};
    home_receive(sut, Message{.kind = Msg::write_req, .client = 0});
    ASSERT_EQ(sut.state, DState::wait_acks);
    EXPECT_TRUE(home_receive(sut, Message{.kind = Msg::evict, .client = 1}).ok);
    EXPECT_EQ(sut.state, DState::wait_acks);
    EXPECT_TRUE(home_receive(sut, Message{.kind = Msg::inv_ack, .client = 2}).out.empty());
    const Step last = home_receive(sut, Message{.kind = Msg::inv_ack, .client = 1});
    ASSERT_EQ(last.out.size(), 1U);
    EXPECT_EQ(last.out[0].grant, CState::M);
    EXPECT_EQ(sut.owner, 0);
}

TEST(DsmHomeProtocol, queued_requests_are_served_in_order_after_the_recall) {
    HomeEntry sut{.state = DState::EM, .owner = 0, .version = 1};
    home_receive(sut, Message{.kind = Msg::read_req, .client = 1});
    home_receive(sut, Message{.kind = Msg::read_req, .client = 2});
    home_receive(sut, Message{.kind = Msg::write_req, .client = 3});
    const Step ack = home_receive(
        sut, Message{.kind = Msg::recall_ack, .client = 0, .version = 2, .has_data = true, .kept_copy = true});
    // read 1 and read 2 granted S (0 kept S), then write 3 invalidates 0, 1, 2.
    ASSERT_EQ(ack.out.size(), 5U);
    EXPECT_EQ(ack.out[0].client, 1);
    EXPECT_EQ(ack.out[1].client, 2);
    EXPECT_EQ(ack.out[2].kind, Msg::inv);
    EXPECT_EQ(sut.state, DState::wait_acks);
    EXPECT_EQ(sut.awaiting, 0b111U);
}

TEST(DsmHomeProtocol, subscribers_get_a_notify_per_published_version_with_data_only_when_they_asked) {
    HomeEntry sut;
    home_receive(sut, Message{.kind = Msg::subscribe, .client = 1, .update = true});
    home_receive(sut, Message{.kind = Msg::subscribe, .client = 2});
    const Step g = home_receive(sut, Message{.kind = Msg::write_req, .client = 0});
    ASSERT_EQ(g.out.size(), 1U);
    EXPECT_TRUE(g.out[0].publish);
    const Step p = home_receive(sut, Message{.kind = Msg::publish, .client = 0, .version = 1, .has_data = true});
    ASSERT_EQ(p.out.size(), 2U);
    EXPECT_EQ(p.out[0].kind, Msg::notify);
    EXPECT_TRUE(p.out[0].has_data);
    EXPECT_FALSE(p.out[1].has_data);
    EXPECT_EQ(sut.state, DState::EM);
}

TEST(DsmHomeProtocol, a_subscription_to_a_silently_owned_chunk_recalls_it_before_the_ack) {
    HomeEntry sut{.state = DState::EM, .owner = 0, .version = 1};
    const Step s = home_receive(sut, Message{.kind = Msg::subscribe, .client = 1});
    ASSERT_EQ(s.out.size(), 1U);
    EXPECT_EQ(s.out[0].kind, Msg::recall);
    const Step a = home_receive(
        sut, Message{.kind = Msg::recall_ack, .client = 0, .version = 2, .has_data = true, .kept_copy = true});
    // The version it learnt was released before the subscription: not notified.
    ASSERT_EQ(a.out.size(), 1U);
    EXPECT_EQ(a.out[0].kind, Msg::sub_ack);
    EXPECT_EQ(sut.subs, 0b10U);
    EXPECT_EQ(sut.state, DState::S);
}

TEST(DsmHomeProtocol, a_client_id_outside_the_mask_is_refused) {
    HomeEntry sut;
    EXPECT_FALSE(home_receive(sut, Message{.kind = Msg::read_req, .client = 64}).ok);
    EXPECT_FALSE(home_receive(sut, Message{.kind = Msg::read_req, .client = -1}).ok);
}

}  // namespace
}  // namespace strata::dsm::proto
