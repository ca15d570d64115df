// SPDX-License-Identifier: MIT
// Handles: save/load and every way a handle can be wrong.
#include <gtest/gtest.h>

#include "unit/shm_test_support.hpp"

namespace strata {
namespace {

using test::fails_with;

static_assert(std::is_trivially_copyable_v<Handle>);

class ShmHandle : public ::testing::Test {
protected:
    void SetUp() override {
        auto s = fixture.open(SegmentMode::create_only);
        ASSERT_TRUE(s.has_value()) << s.error().what();
        sut.emplace(std::move(*s));
    }
    test::ShmFixture fixture;
    std::optional<Segment> sut;
};

TEST_F(ShmHandle, a_saved_handle_loads_the_same_object_in_another_attachment) {
    STRATA_ASSERT_ASSIGN(v, sut->container<strata::vector<int>>("v", std::size_t{3}));
    (*v)[2] = 9;
    STRATA_ASSERT_ASSIGN(h, sut->save(*v));
    EXPECT_EQ(h.segment, sut->id());
    EXPECT_EQ(h.type, type_id<strata::vector<int>>());
    STRATA_ASSERT_ASSIGN(other, fixture.open(SegmentMode::open_only, 0));
    STRATA_ASSERT_ASSIGN(w, other.load<strata::vector<int>>(h));
    EXPECT_EQ((*w)[2], 9);
    EXPECT_NE(static_cast<void*>(w), static_cast<void*>(v));
}

TEST_F(ShmHandle, loading_as_another_type_fails_naming_both_types) {
    STRATA_ASSERT_ASSIGN(n, sut->make<int>(1));
    STRATA_ASSERT_ASSIGN(h, sut->save(*n));
    EXPECT_TRUE(fails_with(sut->load<double>(h), Errc::invalid_argument, {"'int'"}));
    Handle forged = h;
    forged.type = type_id<double>();
    EXPECT_TRUE(fails_with(sut->load<double>(forged), Errc::invalid_argument, {"type=", "'int'"}));
}

TEST_F(ShmHandle, a_handle_of_another_segment_fails_naming_this_segment) {
    test::ShmFixture other_fixture;
    STRATA_ASSERT_ASSIGN(other, other_fixture.open(SegmentMode::create_only));
    STRATA_ASSERT_ASSIGN(n, other.make<int>(1));
    STRATA_ASSERT_ASSIGN(h, other.save(*n));
    EXPECT_TRUE(fails_with(sut->load<int>(h), Errc::invalid_argument, {"another segment", fixture.name}));
}

TEST_F(ShmHandle, a_handle_of_a_recreated_segment_fails) {
    STRATA_ASSERT_ASSIGN(n, sut->make<int>(1));
    STRATA_ASSERT_ASSIGN(h, sut->save(*n));
    sut.reset();
    STRATA_ASSERT_ASSIGN(fresh, fixture.open(SegmentMode::recreate));
    STRATA_ASSERT_OK(fresh.make<int>(2));
    EXPECT_TRUE(fails_with(fresh.load<int>(h), Errc::invalid_argument, {"another segment"}));
}

TEST_F(ShmHandle, a_handle_to_a_freed_object_fails_with_not_found) {
    STRATA_ASSERT_ASSIGN(n, sut->make<int>(1));
    STRATA_ASSERT_ASSIGN(h, sut->save(*n));
    STRATA_ASSERT_OK(sut->destroy(n));
    EXPECT_TRUE(fails_with(sut->load<int>(h), Errc::not_found, {"offset=", "freed"}));
}

TEST_F(ShmHandle, a_stale_handle_to_a_reused_place_fails_naming_both_generations) {
    STRATA_ASSERT_ASSIGN(n, sut->make<int>(1));
    STRATA_ASSERT_ASSIGN(h, sut->save(*n));
    STRATA_ASSERT_OK(sut->destroy(n));
    STRATA_ASSERT_ASSIGN(m, sut->make<int>(2));
    STRATA_ASSERT_ASSIGN(h2, sut->save(*m));
    ASSERT_EQ(h2.offset, h.offset) << "the allocator reuses the freed place";
    EXPECT_TRUE(fails_with(sut->load<int>(h), Errc::not_found,
                           {"stale", fmt::format("generation={}", h.generation), std::to_string(h2.generation)}));
}

TEST_F(ShmHandle, out_of_range_and_null_handles_fail) {
    STRATA_ASSERT_ASSIGN(n, sut->make<int>(1));
    STRATA_ASSERT_ASSIGN(h, sut->save(*n));
    Handle beyond = h;
    beyond.offset = sut->size() + 4096;
    EXPECT_TRUE(fails_with(sut->load<int>(beyond), Errc::invalid_argument, {"out of range", "offset="}));
    Handle inside_header = h;
    inside_header.offset = 64;
    EXPECT_TRUE(fails_with(sut->load<int>(inside_header), Errc::invalid_argument, {"out of range"}));
    Handle misaligned = h;
    misaligned.offset += 8;
    EXPECT_TRUE(fails_with(sut->load<int>(misaligned), Errc::invalid_argument, {"out of range"}));
    EXPECT_TRUE(fails_with(sut->load<int>(Handle{}), Errc::invalid_argument, {"null"}));
}

TEST_F(ShmHandle, a_member_or_an_outside_object_cannot_be_saved) {
    STRATA_ASSERT_ASSIGN(v, sut->container<strata::vector<int>>("v", std::size_t{10}));
    EXPECT_TRUE(fails_with(sut->save((*v)[3]), Errc::invalid_argument, {"not an object made by segment"}));
    int outside = 0;
    EXPECT_TRUE(fails_with(sut->save(outside), Errc::invalid_argument, {"not inside segment"}));
}

TEST_F(ShmHandle, type_ids_differ_between_types_and_agree_for_the_same_type) {
    EXPECT_NE(type_id<int>(), type_id<unsigned>());
    EXPECT_NE(type_id<strata::vector<int>>(), type_id<strata::vector<long>>());
    EXPECT_EQ(type_id<strata::vector<int>>(), type_id<strata::vector<int>>());
    EXPECT_EQ(type_name<int>(), "int");
}

}  // namespace
}  // namespace strata
