// SPDX-License-Identifier: MIT
// Every (state, message) pair of both protocol tables, against expectations
// written by hand from the protocol of docs/dsm.md (not read from the table).
//
// Canonical entries: version 3 everywhere.
//   home U: no copies.  S: sharers {1,2}.  EM: owner 2.
//   wait_acks: sharer 2 awaited, pending write_req of 1 (which caches v3).
//   wait_recall: owner 2 recalled, pending read_req of 3 (no cached bytes).
// Senders: requests (read/write/subscribe/unsubscribe/free) from client 3;
// evict, write_back, publish, recall_ack, inv_ack from client 2; payloads v4.
// Client canonical entries: client 5, bytes of v3, nothing held or pending;
// a recall asks to go to S.
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "dsm/protocol_table.hpp"

namespace strata::dsm::proto {
namespace {

std::uint64_t bit(int c) {
    return std::uint64_t{1} << c;
}

std::vector<Msg> all_messages() {
    std::vector<Msg> v;
    for (int i = 0; i < kMsgCount; ++i) {
        v.push_back(static_cast<Msg>(i));
    }
    return v;
}

HomeEntry canonical_home(DState s) {
    HomeEntry e;
    e.version = 3;
    e.state = s;
    switch (s) {
        case DState::U: break;
        case DState::S: e.sharers = bit(1) | bit(2); break;
        case DState::EM: e.owner = 2; break;
        case DState::wait_acks:
            e.sharers = bit(2);
            e.awaiting = bit(2);
            e.pending = {.kind = Msg::write_req, .client = 1, .version = 3, .cached = true};
            break;
        case DState::wait_recall:
            e.owner = 2;
            e.pending = {.kind = Msg::read_req, .client = 3};
            break;
    }
    return e;
}

Message canonical_to_home(Msg m) {
    Message msg{.kind = m, .client = 3};
    switch (m) {
        case Msg::evict:
        case Msg::inv_ack: msg.client = 2; break;
        case Msg::write_back:
        case Msg::publish:
        case Msg::recall_ack:
            msg.client = 2;
            msg.version = 4;
            msg.has_data = m != Msg::recall_ack;
            break;
        default: break;
    }
    return msg;
}

std::string describe(const Message& m) {
    std::string s = fmt::format("{}>{}", to_string(m.kind), m.client);
    if (m.kind == Msg::grant || m.kind == Msg::recall) {
        s += fmt::format(" {}", to_string(m.grant));
    }
    if (m.kind == Msg::grant || m.kind == Msg::recall_ack || m.kind == Msg::write_back) {
        s += m.has_data ? " data" : " nodata";
    }
    if (m.kind == Msg::recall_ack && m.kept_copy) {
        s += " kept";
    }
    return s;
}

std::string describe(const Step& st) {
    std::string s;
    for (const auto& m : st.out) {
        s += (s.empty() ? "" : ", ") + describe(m);
    }
    return s;
}

struct HomeExpect {
    DState next;
    std::string out;
    bool store = false;
    bool erase = false;
    std::size_t queued = 0;
};

using enum DState;
using enum Msg;

// Hand-written from the protocol; every pair not listed must be refused.
const std::map<std::pair<DState, Msg>, HomeExpect>& home_expectations() {
    static const std::map<std::pair<DState, Msg>, HomeExpect> t = {
        {{U, read_req}, {EM, "grant>3 E data"}},
        {{U, write_req}, {EM, "grant>3 M data"}},
        {{U, subscribe}, {U, "sub_ack>3"}},
        {{U, unsubscribe}, {U, ""}},
        {{U, free_req}, {U, "freed>3", false, true}},

        {{S, read_req}, {S, "grant>3 S data"}},
        {{S, write_req}, {wait_acks, "inv>1, inv>2"}},
        {{S, evict}, {S, ""}},
        {{S, subscribe}, {S, "sub_ack>3"}},
        {{S, unsubscribe}, {S, ""}},
        {{S, free_req}, {U, "freed>1, freed>2, freed>3", false, true}},

        {{EM, read_req}, {wait_recall, "recall>2 S"}},
        {{EM, write_req}, {wait_recall, "recall>2 I"}},
        {{EM, evict}, {U, ""}},
        {{EM, write_back}, {U, "", true}},
        {{EM, publish}, {EM, "", true}},
        {{EM, subscribe}, {wait_recall, "recall>2 S"}},
        {{EM, unsubscribe}, {EM, ""}},
        {{EM, free_req}, {U, "freed>2, freed>3", false, true}},

        {{wait_acks, read_req}, {wait_acks, "", false, false, 1}},
        {{wait_acks, write_req}, {wait_acks, "", false, false, 1}},
        {{wait_acks, evict}, {wait_acks, ""}},
        {{wait_acks, inv_ack}, {EM, "grant>1 M nodata"}},
        {{wait_acks, subscribe}, {wait_acks, "", false, false, 1}},
        {{wait_acks, unsubscribe}, {wait_acks, ""}},
        {{wait_acks, free_req}, {wait_acks, "", false, false, 1}},

        {{wait_recall, read_req}, {wait_recall, "", false, false, 1}},
        {{wait_recall, write_req}, {wait_recall, "", false, false, 1}},
        {{wait_recall, evict}, {wait_recall, ""}},
        {{wait_recall, write_back}, {wait_recall, "", true}},
        {{wait_recall, recall_ack}, {EM, "grant>3 E data"}},
        {{wait_recall, publish}, {wait_recall, "", true}},
        {{wait_recall, subscribe}, {wait_recall, "", false, false, 1}},
        {{wait_recall, unsubscribe}, {wait_recall, ""}},
        {{wait_recall, free_req}, {wait_recall, "", false, false, 1}},
    };
    return t;
}

using HomePair = std::tuple<DState, Msg>;
class HomeTable : public ::testing::TestWithParam<HomePair> {};

TEST_P(HomeTable, every_state_and_message_pair_does_what_the_protocol_says) {
    const auto [state, msg] = GetParam();
    HomeEntry sut = canonical_home(state);
    const Step st = home_receive(sut, canonical_to_home(msg));
    const auto& t = home_expectations();
    const auto it = t.find({state, msg});
    if (it == t.end()) {
        EXPECT_FALSE(st.ok) << "rule " << home_rule(state, msg) << " accepted it";
        EXPECT_FALSE(st.error.empty());
        EXPECT_TRUE(st.out.empty());
        return;
    }
    ASSERT_TRUE(st.ok) << st.error;
    EXPECT_EQ(sut.state, it->second.next) << to_string(sut.state);
    EXPECT_EQ(describe(st), it->second.out);
    EXPECT_EQ(st.store, it->second.store);
    EXPECT_EQ(st.erase, it->second.erase);
    EXPECT_EQ(sut.queue.size(), it->second.queued);
}

std::string home_pair_name(const ::testing::TestParamInfo<HomePair>& info) {
    return fmt::format("{}_{}", to_string(std::get<0>(info.param)), to_string(std::get<1>(info.param)));
}

INSTANTIATE_TEST_SUITE_P(AllPairs, HomeTable,
                         ::testing::Combine(::testing::Values(U, S, EM, wait_acks, wait_recall),
                                            ::testing::ValuesIn(all_messages())),
                         home_pair_name);

// ---- client -------------------------------------------------------------

ClientEntry canonical_client(CState s) {
    return ClientEntry{.state = s, .version = 3, .has_bytes = true};
}

struct ClientExpect {
    CState next;
    std::string out;
    bool hit = false;
    bool wait = false;
    bool deliver = false;
    bool erase = false;
};

const std::map<std::pair<CState, Msg>, ClientExpect>& client_expectations() {
    using C = CState;
    static const std::map<std::pair<CState, Msg>, ClientExpect> t = {
        {{C::I, op_acquire_read}, {C::I, "read_req>5", false, true}},
        {{C::I, op_acquire_write}, {C::I, "write_req>5", false, true}},
        {{C::I, op_evict}, {C::I, ""}},
        {{C::I, inv}, {C::I, "inv_ack>5"}},
        {{C::I, recall}, {C::I, "recall_ack>5 nodata"}},
        {{C::I, notify}, {C::I, "", false, false, true}},
        {{C::I, sub_ack}, {C::I, ""}},
        {{C::I, freed}, {C::I, "", false, false, false, true}},

        {{C::S, op_acquire_read}, {C::S, "", true}},
        {{C::S, op_acquire_write}, {C::S, "write_req>5", false, true}},
        {{C::S, op_evict}, {C::I, "evict>5"}},
        {{C::S, inv}, {C::I, "inv_ack>5"}},
        {{C::S, notify}, {C::S, "", false, false, true}},
        {{C::S, sub_ack}, {C::S, ""}},
        {{C::S, freed}, {C::I, "", false, false, false, true}},

        {{C::E, op_acquire_read}, {C::E, "", true}},
        {{C::E, op_acquire_write}, {C::M, "", true}},
        {{C::E, op_evict}, {C::I, "evict>5"}},
        {{C::E, recall}, {C::S, "recall_ack>5 nodata kept"}},
        {{C::E, notify}, {C::E, "", false, false, true}},
        {{C::E, sub_ack}, {C::E, ""}},
        {{C::E, freed}, {C::I, "", false, false, false, true}},

        {{C::M, op_acquire_read}, {C::M, "", true}},
        {{C::M, op_acquire_write}, {C::M, "", true}},
        {{C::M, op_evict}, {C::I, "write_back>5 data"}},
        {{C::M, recall}, {C::S, "recall_ack>5 data kept"}},
        {{C::M, notify}, {C::M, "", false, false, true}},
        {{C::M, sub_ack}, {C::M, ""}},
        {{C::M, freed}, {C::I, "", false, false, false, true}},
    };
    return t;
}

using ClientPair = std::tuple<CState, Msg>;
class ClientTable : public ::testing::TestWithParam<ClientPair> {};

TEST_P(ClientTable, every_state_and_event_pair_does_what_the_protocol_says) {
    const auto [state, msg] = GetParam();
    ClientEntry sut = canonical_client(state);
    Message m{.kind = msg, .client = 5, .version = 3, .grant = CState::S};
    const Step st = client_receive(sut, m);
    const auto& t = client_expectations();
    const auto it = t.find({state, msg});
    if (it == t.end()) {
        EXPECT_FALSE(st.ok) << "rule " << client_rule(state, msg) << " accepted it";
        EXPECT_FALSE(st.error.empty());
        EXPECT_TRUE(st.out.empty());
        return;
    }
    ASSERT_TRUE(st.ok) << st.error;
    EXPECT_EQ(sut.state, it->second.next) << to_string(sut.state);
    EXPECT_EQ(describe(st), it->second.out);
    EXPECT_EQ(st.hit, it->second.hit);
    EXPECT_EQ(st.wait, it->second.wait);
    EXPECT_EQ(st.deliver, it->second.deliver);
    EXPECT_EQ(st.erase, it->second.erase);
}

std::string client_pair_name(const ::testing::TestParamInfo<ClientPair>& info) {
    return fmt::format("{}_{}", to_string(std::get<0>(info.param)), to_string(std::get<1>(info.param)));
}

INSTANTIATE_TEST_SUITE_P(AllPairs, ClientTable,
                         ::testing::Combine(::testing::Values(CState::I, CState::S, CState::E, CState::M),
                                            ::testing::ValuesIn(all_messages())),
                         client_pair_name);

}  // namespace
}  // namespace strata::dsm::proto
