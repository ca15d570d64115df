// SPDX-License-Identifier: MIT
// The direct data path step by step (docs/dsm.md, "Direct data path"): what a
// direct grant says, what its owner sends at release, what the home does with
// a release that brought no bytes, the recalls that keep a grant's targets
// equal to the update-subscribers, and the order a subscriber hands
// notifications on in (NotifyOrder).
#include <gtest/gtest.h>

#include "dsm/notify_order.hpp"
#include "dsm/protocol_table.hpp"

namespace strata::dsm::proto {
namespace {

std::uint64_t bit(ClientId c) {
    return std::uint64_t{1} << static_cast<unsigned>(c);
}

/// A direct home with client 1 subscribed with update-on-write and client 2 without.
HomeEntry home_with_subscribers() {
    HomeEntry h{.direct = true, .version = 3};
    h.subs = bit(1) | bit(2);
    h.subs_update = bit(1);
    return h;
}

TEST(DsmDirectPath, a_write_grant_names_the_update_subscribers_as_its_targets) {
    HomeEntry h = home_with_subscribers();
    const Step st = home_receive(h, Message{.kind = Msg::write_req, .client = 0});
    ASSERT_EQ(st.out.size(), 1U);
    EXPECT_EQ(st.out[0].kind, Msg::grant);
    EXPECT_TRUE(st.out[0].publish);
    EXPECT_EQ(st.out[0].targets, bit(1));
    EXPECT_EQ(h.owner_targets, bit(1));
}

TEST(DsmDirectPath, without_update_subscribers_the_grant_publishes_through_the_home) {
    HomeEntry h{.direct = true};
    h.subs = bit(2);
    const Step st = home_receive(h, Message{.kind = Msg::write_req, .client = 0});
    ASSERT_EQ(st.out.size(), 1U);
    EXPECT_TRUE(st.out[0].publish);
    EXPECT_EQ(st.out[0].targets, 0U);  // not direct: the home keeps the data, it survives the writer
}

TEST(DsmDirectPath, a_home_without_the_path_never_grants_it) {
    HomeEntry h = home_with_subscribers();
    h.direct = false;
    const Step st = home_receive(h, Message{.kind = Msg::write_req, .client = 0});
    ASSERT_EQ(st.out.size(), 1U);
    EXPECT_EQ(st.out[0].targets, 0U);
}

TEST(DsmDirectPath, a_direct_release_sends_the_data_to_the_targets_and_the_version_to_the_home) {
    ClientEntry c;
    ASSERT_TRUE(client_receive(c, Message{.kind = Msg::op_acquire_write, .client = 0}).wait);
    ASSERT_TRUE(client_receive(c, Message{.kind = Msg::grant,
                                          .client = 0,
                                          .version = 3,
                                          .has_data = true,
                                          .grant = CState::M,
                                          .publish = true,
                                          .targets = bit(1) | bit(5)})
                    .completed);
    const Step rel = client_receive(c, Message{.kind = Msg::op_release_write, .client = 0});
    ASSERT_TRUE(rel.ok);
    ASSERT_EQ(rel.out.size(), 3U);
    EXPECT_EQ(rel.out[0].kind, Msg::publish);
    EXPECT_FALSE(rel.out[0].has_data);
    EXPECT_EQ(rel.out[0].version, 4U);
    for (std::size_t i : {1U, 2U}) {
        EXPECT_EQ(rel.out[i].kind, Msg::notify);
        EXPECT_TRUE(rel.out[i].has_data);
        EXPECT_EQ(rel.out[i].version, 4U);
    }
    EXPECT_EQ(rel.out[1].client, 1);
    EXPECT_EQ(rel.out[2].client, 5);
    EXPECT_EQ(c.state, CState::M);  // the only current copy until a recall
    EXPECT_TRUE(client_receive(c, Message{.kind = Msg::op_acquire_write, .client = 0}).hit);
}

TEST(DsmDirectPath, a_release_without_bytes_tells_only_the_subscribers_the_writer_did_not) {
    HomeEntry h = home_with_subscribers();
    ASSERT_TRUE(home_receive(h, Message{.kind = Msg::write_req, .client = 0}).ok);
    const Step st = home_receive(h, Message{.kind = Msg::publish, .client = 0, .version = 4});
    ASSERT_TRUE(st.ok);
    EXPECT_FALSE(st.store);
    EXPECT_EQ(h.version, 4U);
    ASSERT_EQ(st.out.size(), 1U);
    EXPECT_EQ(st.out[0].kind, Msg::notify);
    EXPECT_EQ(st.out[0].client, 2);
    EXPECT_FALSE(st.out[0].has_data);
}

TEST(DsmDirectPath, the_recalled_copy_of_a_direct_owner_is_stored_without_telling_anyone_again) {
    HomeEntry h = home_with_subscribers();
    ASSERT_TRUE(home_receive(h, Message{.kind = Msg::write_req, .client = 0}).ok);
    ASSERT_TRUE(home_receive(h, Message{.kind = Msg::publish, .client = 0, .version = 4}).ok);
    ASSERT_TRUE(home_receive(h, Message{.kind = Msg::read_req, .client = 3}).ok);  // recall
    ASSERT_EQ(h.state, DState::wait_recall);
    const Step st = home_receive(
        h, Message{.kind = Msg::recall_ack, .client = 0, .version = 4, .has_data = true, .kept_copy = true});
    ASSERT_TRUE(st.ok);
    EXPECT_TRUE(st.store);
    ASSERT_EQ(st.out.size(), 1U);
    EXPECT_EQ(st.out[0].kind, Msg::grant);
    EXPECT_EQ(st.out[0].client, 3);
}

TEST(DsmDirectPath, a_publish_without_bytes_from_an_owner_not_granted_direct_is_refused) {
    HomeEntry h{.direct = true};
    h.subs = bit(2);
    ASSERT_TRUE(home_receive(h, Message{.kind = Msg::write_req, .client = 0}).ok);
    const Step st = home_receive(h, Message{.kind = Msg::publish, .client = 0, .version = 1});
    EXPECT_FALSE(st.ok);
    EXPECT_NE(st.error.find("not direct"), std::string::npos) << st.error;
}

TEST(DsmDirectPath, a_new_update_subscriber_recalls_the_direct_owner_before_its_ack) {
    HomeEntry h = home_with_subscribers();
    ASSERT_TRUE(home_receive(h, Message{.kind = Msg::write_req, .client = 0}).ok);
    const Step sub = home_receive(h, Message{.kind = Msg::subscribe, .client = 3, .update = true});
    ASSERT_EQ(sub.out.size(), 1U);
    EXPECT_EQ(sub.out[0].kind, Msg::recall);
    EXPECT_EQ(h.subs & bit(3), 0U);  // registered after the recall: told of later releases only
    const Step ack = home_receive(h, Message{.kind = Msg::recall_ack, .client = 0, .version = 3, .kept_copy = true});
    ASSERT_EQ(ack.out.size(), 1U);
    EXPECT_EQ(ack.out[0].kind, Msg::sub_ack);
    EXPECT_EQ(h.subs_update, bit(1) | bit(3));
}

TEST(DsmDirectPath, an_unsubscribing_target_recalls_the_direct_owner_and_a_non_target_does_not) {
    HomeEntry h = home_with_subscribers();
    ASSERT_TRUE(home_receive(h, Message{.kind = Msg::write_req, .client = 0}).ok);
    EXPECT_TRUE(home_receive(h, Message{.kind = Msg::unsubscribe, .client = 2}).out.empty());
    EXPECT_EQ(h.state, DState::EM);
    const Step st = home_receive(h, Message{.kind = Msg::unsubscribe, .client = 1});
    ASSERT_EQ(st.out.size(), 1U);
    EXPECT_EQ(st.out[0].kind, Msg::recall);
    EXPECT_TRUE(home_receive(h, Message{.kind = Msg::recall_ack, .client = 0, .version = 3}).ok);
    EXPECT_EQ(h.subs, 0U);
}

TEST(DsmDirectPath, a_subscriber_hands_versions_on_in_order_whatever_order_they_arrive_in) {
    NotifyOrder<int> order;
    order.subscribing(0);
    EXPECT_TRUE(order.offer(6, 6).empty());  // before the answer: kept
    EXPECT_TRUE(order.subscribed(4).empty());
    EXPECT_EQ(order.waiting(), 1U);
    EXPECT_EQ(order.offer(5, 5), (std::vector<int>{5, 6}));
    EXPECT_TRUE(order.offer(5, 50).empty());  // handed on already
    EXPECT_TRUE(order.offer(8, 8).empty());
    EXPECT_EQ(order.own_release(7), (std::vector<int>{8}));  // its own release fills its place
    EXPECT_EQ(order.next(), 9U);
}

TEST(DsmDirectPath, a_subscription_starts_after_the_subscribers_own_unreported_releases) {
    NotifyOrder<int> order;
    order.own_release(9);  // not subscribed yet: remembered, not queued
    order.subscribing(7);
    EXPECT_TRUE(order.subscribed(6).empty());  // the home had not heard of 7..9 yet
    EXPECT_EQ(order.next(), 10U);
    EXPECT_EQ(order.offer(10, 10), (std::vector<int>{10}));
}

TEST(DsmDirectPath, an_unsubscribed_chunk_hands_nothing_on_and_a_new_subscription_starts_afresh) {
    NotifyOrder<int> order;
    order.subscribing(0);
    (void)order.subscribed(2);
    EXPECT_TRUE(order.offer(4, 4).empty());
    order.unsubscribed();
    EXPECT_EQ(order.waiting(), 0U);
    EXPECT_TRUE(order.offer(3, 3).empty());
    order.subscribing(0);
    EXPECT_TRUE(order.subscribed(5).empty());
    EXPECT_EQ(order.offer(6, 6), (std::vector<int>{6}));
}

TEST(DsmDirectPath, subscribing_again_goes_on_where_the_subscription_was) {
    NotifyOrder<int> order;
    order.subscribing(0);
    (void)order.subscribed(2);
    EXPECT_EQ(order.offer(3, 3), (std::vector<int>{3}));
    order.subscribing(0);
    EXPECT_TRUE(order.subscribed(7).empty());  // the subscription never lapsed: 4..7 are still on their way
    EXPECT_EQ(order.offer(4, 4), (std::vector<int>{4}));
}

}  // namespace
}  // namespace strata::dsm::proto
