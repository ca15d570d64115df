// SPDX-License-Identifier: MIT
// Handles as text (named_handle.hpp): round trip, every malformed field named,
// and a read-only handle opening its segment read_only.
#include <gtest/gtest.h>

#include "unit/shm_test_support.hpp"

namespace strata {
namespace {

using test::fails_with;

TEST(ShmNamedHandle, a_handle_survives_its_text_form_field_for_field) {
    const NamedHandle sut{"seg-1.a_b", Handle{0xfedcba9876543210ULL, 7, 0x20010, 0x1234abcdULL}, true};
    const std::string text = to_string(sut);
    EXPECT_EQ(text, "shm:seg-1.a_b:fedcba9876543210:7:20010:1234abcd:rw");
    STRATA_ASSERT_ASSIGN(parsed, parse_named_handle(text));
    EXPECT_EQ(parsed.segment, sut.segment);
    EXPECT_EQ(parsed.handle, sut.handle);
    EXPECT_TRUE(parsed.writable);
    EXPECT_FALSE(parse_named_handle("shm:s:1:2:30:4:ro")->writable);
}

TEST(ShmNamedHandle, malformed_text_is_refused_naming_the_parameter_the_text_and_the_field) {
    EXPECT_TRUE(fails_with(parse_named_handle("/tmp/x.bin", "argv[1]"), Errc::invalid_argument,
                           {"argv[1]=/tmp/x.bin", "not a handle of the form shm:<segment>"}));
    EXPECT_TRUE(fails_with(parse_named_handle("shm:s:1:2:30:4"), Errc::invalid_argument, {"handle=shm:s:1:2:30:4"}));
    EXPECT_TRUE(fails_with(parse_named_handle("shm::1:2:30:4:ro"), Errc::invalid_argument, {"segment name is empty"}));
    EXPECT_TRUE(fails_with(parse_named_handle("shm:s:1:g:30:4:ro"), Errc::invalid_argument, {"generation 'g'"}));
    EXPECT_TRUE(fails_with(parse_named_handle("shm:s:1:2:30:10000000000000000:ro"), Errc::invalid_argument,
                           {"type '10000000000000000'"}));
    EXPECT_TRUE(fails_with(parse_named_handle("shm:s:1:2:30:4:wx"), Errc::invalid_argument, {"access 'wx'"}));
}

TEST(ShmNamedHandle, a_read_only_handle_opens_its_segment_read_only_and_a_writable_one_for_writing) {
    test::ShmFixture fixture;
    STRATA_ASSERT_ASSIGN(owner, fixture.open(SegmentMode::create_only));
    STRATA_ASSERT_ASSIGN(v, owner.container<strata::vector<std::uint8_t>>("block", std::size_t{64}));
    (*v)[5] = 42;
    STRATA_ASSERT_ASSIGN(h, owner.save(*v));
    for (const bool writable : {false, true}) {
        const NamedHandle named{owner.name(), h, writable};
        STRATA_ASSERT_ASSIGN(seg, open_segment(named, fixture.options));
        EXPECT_EQ(seg.is_read_only(), !writable);
        STRATA_ASSERT_ASSIGN(loaded, seg.load<strata::vector<std::uint8_t>>(named.handle));
        EXPECT_EQ((*loaded)[5], 42);
        EXPECT_EQ(loaded->size(), 64U);
    }
}

TEST(ShmNamedHandle, a_handle_whose_segment_is_gone_fails_with_not_found_naming_it) {
    test::ShmFixture fixture;
    NamedHandle named;
    {
        STRATA_ASSERT_ASSIGN(owner, fixture.open(SegmentMode::create_only));
        STRATA_ASSERT_ASSIGN(v, owner.make<int>(1));
        STRATA_ASSERT_ASSIGN(h, owner.save(*v));
        named = NamedHandle{owner.name(), h, false};
    }
    EXPECT_TRUE(fails_with(open_segment(named, fixture.options), Errc::not_found, {named.segment}));
}

}  // namespace
}  // namespace strata
