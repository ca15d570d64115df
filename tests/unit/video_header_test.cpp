// SPDX-License-Identifier: MIT
// The check of received control headers (apps/video/header.cpp): what a peer's
// header may announce before a rank acts on it. The inputs that found these
// cases are in tests/fuzz/corpus/video_header/.
#include <gtest/gtest.h>

#include "common.hpp"
#include "decoder.hpp"

namespace {

using strata::Errc;
using strata::video::check_header;
using strata::video::check_job;
using strata::video::Header;
using strata::video::Kind;

Header job(int width, int height) {
    return Header{.kind = Kind::job, .index = 0, .width = width, .height = height};
}

TEST(VideoHeader, a_job_of_a_frame_with_a_zero_or_negative_side_is_corrupted) {
    for (auto [w, h] : {std::pair{0, 3014656}, std::pair{-1, -100}, std::pair{640, 0}, std::pair{-640, 480}}) {
        auto r = check_header(job(w, h), "the input");
        ASSERT_FALSE(r) << w << "x" << h;
        EXPECT_EQ(r.error().code, Errc::corrupted);
        EXPECT_NE(r.error().message.find("the input"), std::string::npos) << r.error().message;
        EXPECT_NE(r.error().message.find(std::to_string(w) + "x" + std::to_string(h)), std::string::npos)
            << r.error().message;
    }
}

TEST(VideoHeader, a_frame_side_beyond_the_largest_is_corrupted) {
    EXPECT_FALSE(check_header(job(strata::video::kMaxFrameSide + 1, 2), "x"));
    EXPECT_FALSE(check_header(Header{.kind = Kind::info, .width = 2, .height = 1 << 30}, "x"));
    EXPECT_TRUE(check_header(job(strata::video::kMaxFrameSide, 1), "x"));
}

TEST(VideoHeader, unknown_kinds_and_negative_indices_and_counts_are_corrupted) {
    EXPECT_FALSE(check_header(Header{.kind = static_cast<Kind>(0)}, "x"));
    EXPECT_FALSE(check_header(Header{.kind = static_cast<Kind>(10)}, "x"));
    EXPECT_FALSE(check_header(Header{.kind = Kind::result, .index = -1}, "x"));
    EXPECT_FALSE(check_header(Header{.kind = Kind::end, .count = -5}, "x"));
    EXPECT_TRUE(check_header(Header{.kind = Kind::result, .index = 3}, "x"));
    EXPECT_TRUE(check_header(Header{.kind = Kind::ready}, "x"));
}

TEST(VideoHeader, a_job_larger_than_the_streams_frames_is_corrupted) {
    const Header small = job(8, 4);
    EXPECT_TRUE(check_job(small, 32, 0, "x"));   // the first job sets the stream's size
    EXPECT_TRUE(check_job(small, 32, 32, "x"));  // later jobs keep it
    auto r = check_job(job(16, 4), 64, 32, "the input");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::corrupted);
    EXPECT_FALSE(check_job(small, 31, 0, "x"));  // bytes that are not width x height
}

}  // namespace
