// SPDX-License-Identifier: MIT
// wire::refusal (src/dsm/admission.hpp): which rank a DSM server takes which message from.
// A job of 2 servers (ranks 0, 1) and 3 clients (ranks 2..4), seen by server 0.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "dsm/admission.hpp"

namespace strata::dsm::wire {
namespace {

constexpr Membership kJob{.servers = 2, .clients = 3, .self = 0};
constexpr int kRead = static_cast<int>(proto::Msg::read_req);

int k(Kind kind) {
    return static_cast<int>(kind);
}

TEST(DsmAdmission, a_client_speaking_for_itself_is_taken) {
    EXPECT_EQ(refusal(kRead, 2, 0, kJob), "");
    EXPECT_EQ(refusal(kRead, 4, 2, kJob), "");
    for (Kind kind : {Kind::alloc_req, Kind::lock_req, Kind::unlock, Kind::bye, Kind::ping, Kind::pong}) {
        EXPECT_EQ(refusal(k(kind), 3, -1, kJob), "") << kind_name(k(kind));
    }
}

TEST(DsmAdmission, a_client_speaking_for_another_client_is_refused) {
    EXPECT_EQ(refusal(kRead, 2, 1, kJob), "a read_req message from client 0 (rank 2) speaks for client 1");
    EXPECT_NE(refusal(kRead, 3, -1, kJob), "");
}

TEST(DsmAdmission, a_rank_outside_the_dsm_is_refused_whatever_it_sends) {
    for (int source : {-1, 5, 99}) {
        for (int kind : {kRead, k(Kind::ping), k(Kind::bye), k(Kind::adopt)}) {
            EXPECT_NE(refusal(kind, source, 0, kJob).find("neither a client nor another server"), std::string::npos)
                << source << " " << kind;
        }
    }
}

TEST(DsmAdmission, a_server_may_forward_for_a_client_of_the_job_only) {
    EXPECT_EQ(refusal(kRead, 1, 2, kJob), "");
    EXPECT_EQ(refusal(kRead, 1, 3, kJob),
              "a read_req message forwarded by server rank 1 names client 3, not one of the 3");
    EXPECT_NE(refusal(kRead, 1, -1, kJob), "");
}

TEST(DsmAdmission, client_only_kinds_from_a_server_and_adopt_from_a_client_are_refused) {
    EXPECT_EQ(refusal(k(Kind::bye), 1, -1, kJob), "a bye message from rank 1, not a client");
    EXPECT_EQ(refusal(k(Kind::bye), 1, 0, kJob), "a bye message from rank 1, not a client");
    EXPECT_EQ(refusal(k(Kind::adopt), 1, -1, kJob), "");
    EXPECT_EQ(refusal(k(Kind::adopt), 2, -1, kJob), "an adopt message from rank 2, not a server");
}

TEST(DsmAdmission, a_super_peer_may_pass_on_allocations_and_locks_for_a_client_of_the_job_only) {
    for (Kind kind : {Kind::alloc_req, Kind::lock_req, Kind::unlock}) {
        EXPECT_EQ(refusal(k(kind), 1, 2, kJob), "") << kind_name(k(kind));
        EXPECT_EQ(refusal(k(kind), 1, 3, kJob),
                  fmt::format("a {} message passed on by server rank 1 names client 3, not one of the 3",
                              kind_name(k(kind))));
        EXPECT_NE(refusal(k(kind), 1, -1, kJob), "") << kind_name(k(kind));
    }
}

TEST(DsmAdmission, a_server_takes_nothing_from_itself_and_no_reply_kinds) {
    EXPECT_NE(refusal(kRead, 0, 1, kJob), "");
    EXPECT_EQ(refusal(k(Kind::error), 2, 0, kJob), "a error message from rank 2: a server takes none");
    EXPECT_NE(refusal(k(Kind::lock_grant), 2, 0, kJob), "");
}

TEST(DsmAdmission, replicas_and_recover_notices_come_from_other_servers_only) {
    for (Kind kind : {Kind::replica, Kind::recover}) {
        EXPECT_EQ(refusal(k(kind), 1, -1, kJob), "") << kind_name(k(kind));
        EXPECT_EQ(refusal(k(kind), 2, 0, kJob),
                  fmt::format("a {} message from rank 2, not a server", kind_name(k(kind))));
        EXPECT_NE(refusal(k(kind), 0, -1, kJob), "") << "from itself";
    }
}

TEST(DsmAdmission, a_recovery_report_comes_from_the_client_it_speaks_for_only) {
    for (Kind kind : {Kind::report, Kind::report_lock, Kind::report_done}) {
        EXPECT_EQ(refusal(k(kind), 3, 1, kJob), "") << kind_name(k(kind));
        EXPECT_EQ(refusal(k(kind), 3, 2, kJob),
                  fmt::format("a {} message from client 1 (rank 3) speaks for client 2", kind_name(k(kind))));
        EXPECT_EQ(refusal(k(kind), 1, 0, kJob),
                  fmt::format("a {} message from rank 1, not a client", kind_name(k(kind))));
    }
}

}  // namespace
}  // namespace strata::dsm::wire
