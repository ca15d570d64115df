// SPDX-License-Identifier: MIT
// What a received header may carry before the protocol's tables see it
// (src/dsm/wire.hpp, wire::decode): the inputs that found these cases are in
// tests/fuzz/corpus/dsm_messages/.
#include <gtest/gtest.h>

#include "dsm/protocol_table.hpp"
#include "dsm/wire.hpp"

namespace strata::dsm {
namespace {

wire::Header header(proto::Msg kind, int client, proto::CState grant = proto::CState::I) {
    return wire::to_header({.kind = kind, .client = client, .grant = grant}, 1, 64);
}

TEST(DsmWire, a_home_takes_only_client_messages_from_clients_of_the_job) {
    EXPECT_TRUE(wire::decode(header(proto::Msg::read_req, 0), 4, wire::kAtHome));
    EXPECT_TRUE(wire::decode(header(proto::Msg::inv_ack, 3), 4, wire::kAtHome));
    for (auto h : {header(proto::Msg::grant, 0), header(proto::Msg::read_req, 4), header(proto::Msg::read_req, -1),
                   header(proto::Msg::evict, 256)}) {
        auto sut = wire::decode(h, 4, wire::kAtHome);
        ASSERT_FALSE(sut) << wire::kind_name(h.kind) << " client " << h.client;
        EXPECT_NE(sut.error().find(std::string(wire::kind_name(h.kind))), std::string::npos) << sut.error();
    }
}

TEST(DsmWire, a_client_takes_only_home_messages_of_a_known_kind_and_state) {
    EXPECT_TRUE(wire::decode(header(proto::Msg::grant, 1, proto::CState::M), 4, 1));
    EXPECT_FALSE(wire::decode(header(proto::Msg::grant, 2, proto::CState::M), 4, 1));  // another client's
    EXPECT_TRUE(wire::decode(header(proto::Msg::notify, -1), 4, 1));
    wire::Header kind_255 = header(proto::Msg::grant, 1);
    kind_255.kind = 255;  // the fuzzer's: it indexed the client table out of bounds
    EXPECT_FALSE(wire::decode(kind_255, 4, 1));
    wire::Header grant_9 = header(proto::Msg::grant, 1);
    grant_9.grant = 9;
    auto sut = wire::decode(grant_9, 4, 1);
    ASSERT_FALSE(sut);
    EXPECT_NE(sut.error().find("state 9"), std::string::npos) << sut.error();
    EXPECT_FALSE(wire::decode(header(proto::Msg::read_req, 1), 4, 1));
    wire::Header transport_kind = header(proto::Msg::grant, 1);
    transport_kind.kind = static_cast<std::uint8_t>(wire::Kind::alloc_req);  // would be op_acquire_read
    EXPECT_FALSE(wire::decode(transport_kind, 4, 1));
}

TEST(DsmWire, the_client_table_refuses_kinds_and_states_it_has_no_cell_for) {
    proto::ClientEntry entry;
    const proto::Step sut =
        proto::client_receive(entry, {.kind = static_cast<proto::Msg>(255), .client = 0, .grant = proto::CState::I});
    EXPECT_FALSE(sut.ok);
    EXPECT_FALSE(proto::client_receive(entry, {.kind = proto::Msg::grant, .grant = static_cast<proto::CState>(7)}).ok);
}

TEST(DsmWire, a_client_takes_no_message_naming_another_client) {
    // The fuzzer's: a recall naming client -1 made the client answer as client -1.
    auto sut = wire::decode(header(proto::Msg::recall, -1), 4, 0);
    ASSERT_FALSE(sut);
    EXPECT_NE(sut.error().find("for client -1 reached client 0"), std::string::npos) << sut.error();
    EXPECT_TRUE(wire::decode(header(proto::Msg::recall, 0), 4, 0));
}

}  // namespace
}  // namespace strata::dsm
