// SPDX-License-Identifier: MIT
// Region::shared: named POSIX shared-memory segments within one process
// (the cross-process behaviour is in integration/region_shared_process_test.cpp).
#include <cstddef>
#include <filesystem>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "strata/region.hpp"
#include "support/resources.hpp"
#include "support/result.hpp"

namespace {

using strata::Errc;
using strata::OpenMode;
using strata::Region;
using strata::RegionKind;
using strata::SharedOptions;
using strata::Tier;
using strata::test::fails_with;
using strata::test::page_size;
using strata::test::shm_path;

class RegionShared : public ::testing::Test {
protected:
    std::string name_ = strata::test::unique_name();
    strata::test::ShmCleanup cleanup_{name_};
};

TEST_F(RegionShared, creating_a_segment_maps_zeroed_memory_of_the_requested_size) {
    const std::size_t size = 8 * page_size();

    STRATA_ASSERT_ASSIGN(sut, Region::shared(size, {.name = name_}));

    EXPECT_EQ(sut.kind(), RegionKind::shared);
    EXPECT_EQ(sut.size(), size);
    EXPECT_EQ(sut.name(), name_);
    EXPECT_TRUE(sut.path().empty());
    EXPECT_EQ(sut.memory_bytes(), size);
    EXPECT_EQ(sut.storage_bytes(), 0U);
    EXPECT_EQ(strata::test::nonzero_byte(sut.bytes()), "");
    EXPECT_TRUE(std::filesystem::exists(shm_path(name_)));
    EXPECT_EQ(strata::test::file_size(shm_path(name_)), size);
}

TEST_F(RegionShared, every_byte_is_placed_in_shared_memory) {
    const std::size_t size = 4 * page_size();
    STRATA_ASSERT_ASSIGN(sut, Region::shared(size, {.name = name_}));

    for (const std::size_t offset : {std::size_t{0}, 2 * page_size() + 3, size - 1}) {
        const auto tier = sut.placement(sut.data() + offset);
        STRATA_ASSERT_OK(tier);
        EXPECT_EQ(*tier, Tier::shared) << "offset " << offset;
    }
}

TEST_F(RegionShared, a_second_mapping_by_name_with_size_zero_takes_the_segment_size_and_shares_the_bytes) {
    const std::size_t size = 4 * page_size();
    STRATA_ASSERT_ASSIGN(creator, Region::shared(size, {.name = name_}));

    STRATA_ASSERT_ASSIGN(sut, Region::shared(0, {.name = name_, .mode = OpenMode::open_only}));
    strata::test::fill_pattern(creator.bytes(), 1);

    EXPECT_EQ(sut.size(), size);
    EXPECT_NE(sut.data(), creator.data());
    EXPECT_EQ(strata::test::pattern_mismatch(sut.bytes(), 1), "");
}

TEST_F(RegionShared, open_or_create_creates_a_missing_segment_then_opens_it) {
    const std::size_t size = 2 * page_size();

    STRATA_ASSERT_ASSIGN(sut, Region::shared(size, {.name = name_, .mode = OpenMode::open_or_create}));
    strata::test::fill_pattern(sut.bytes(), 2);
    STRATA_ASSERT_ASSIGN(again, Region::shared(size, {.name = name_, .mode = OpenMode::open_or_create}));

    EXPECT_EQ(strata::test::file_size(shm_path(name_)), size);
    EXPECT_EQ(strata::test::pattern_mismatch(again.bytes(), 2), "");
}

TEST_F(RegionShared, open_only_of_a_missing_name_is_not_found_naming_the_name) {
    const auto sut = Region::shared(page_size(), {.name = name_, .mode = OpenMode::open_only});

    EXPECT_TRUE(fails_with(sut, Errc::not_found, {"name", name_}));
    EXPECT_FALSE(std::filesystem::exists(shm_path(name_)));
}

TEST_F(RegionShared, create_only_of_an_existing_name_is_already_exists_and_keeps_the_segment) {
    const std::size_t size = 4 * page_size();
    STRATA_ASSERT_ASSIGN(existing, Region::shared(size, {.name = name_}));
    strata::test::fill_pattern(existing.bytes(), 3);

    const auto sut = Region::shared(2 * size, {.name = name_, .mode = OpenMode::create_only});

    EXPECT_TRUE(fails_with(sut, Errc::already_exists, {"name", name_}));
    EXPECT_EQ(strata::test::file_size(shm_path(name_)), size);
    EXPECT_EQ(strata::test::pattern_mismatch(existing.bytes(), 3), "");
}

TEST_F(RegionShared, a_created_segment_has_permissions_0600_by_default) {
    STRATA_ASSERT_ASSIGN(sut, Region::shared(page_size(), {.name = name_}));

    EXPECT_EQ(strata::test::permissions_of(shm_path(name_)), 0600U);
}

TEST_F(RegionShared, a_created_segment_has_the_requested_permissions) {
    STRATA_ASSERT_ASSIGN(sut, Region::shared(page_size(), {.name = name_, .permissions = 0640}));

    EXPECT_EQ(strata::test::permissions_of(shm_path(name_)), 0640U);
}

TEST_F(RegionShared, a_read_only_mapping_reads_the_segment) {
    const std::size_t size = 3 * page_size();
    STRATA_ASSERT_ASSIGN(writer, Region::shared(size, {.name = name_}));
    strata::test::fill_pattern(writer.bytes(), 4);

    STRATA_ASSERT_ASSIGN(sut, Region::shared(0, {.name = name_, .mode = OpenMode::open_only, .read_only = true}));

    EXPECT_EQ(sut.size(), size);
    EXPECT_EQ(strata::test::pattern_mismatch(sut.bytes(), 4), "");
}

TEST_F(RegionShared, zero_size_on_create_is_invalid_argument_naming_size) {
    EXPECT_TRUE(fails_with(Region::shared(0, {.name = name_}), Errc::invalid_argument, {"size", "0"}));
    EXPECT_TRUE(fails_with(Region::shared(0, {.name = name_, .mode = OpenMode::open_or_create}), Errc::invalid_argument,
                           {"size", "0"}));
    EXPECT_FALSE(std::filesystem::exists(shm_path(name_)));
}

TEST_F(RegionShared, a_name_of_200_characters_is_accepted) {
    const std::string long_name = name_ + std::string(200 - name_.size(), 'n');
    strata::test::ShmCleanup long_cleanup(long_name);

    STRATA_ASSERT_ASSIGN(sut, Region::shared(page_size(), {.name = long_name}));

    EXPECT_EQ(sut.name(), long_name);
    EXPECT_TRUE(std::filesystem::exists(shm_path(long_name)));
}

class RegionSharedInvalidName : public ::testing::TestWithParam<std::string> {};

TEST_P(RegionSharedInvalidName, is_invalid_argument_naming_the_parameter_and_the_value) {
    const std::string& bad = GetParam();

    const auto sut = Region::shared(page_size(), {.name = bad, .mode = OpenMode::open_or_create});

    EXPECT_TRUE(fails_with(sut, Errc::invalid_argument, {"name", bad}));
}

INSTANTIATE_TEST_SUITE_P(Names, RegionSharedInvalidName,
                         ::testing::Values(std::string(), std::string("a/b"), std::string("/leading"),
                                           std::string("trailing/"), std::string("."), std::string(".."),
                                           std::string(201, 'n')),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                             return "case_" + std::to_string(param_info.index);
                         });

TEST_F(RegionShared, close_without_unlink_keeps_the_segment_and_its_bytes) {
    const std::size_t size = 2 * page_size();
    STRATA_ASSERT_ASSIGN(sut, Region::shared(size, {.name = name_}));
    strata::test::fill_pattern(sut.bytes(), 5);

    STRATA_ASSERT_OK(sut.close());

    EXPECT_FALSE(sut.is_open());
    ASSERT_TRUE(std::filesystem::exists(shm_path(name_)));
    STRATA_ASSERT_ASSIGN(reopened, Region::shared(0, {.name = name_, .mode = OpenMode::open_only}));
    EXPECT_EQ(strata::test::pattern_mismatch(reopened.bytes(), 5), "");
}

TEST_F(RegionShared, close_with_unlink_removes_the_segment) {
    STRATA_ASSERT_ASSIGN(sut, Region::shared(page_size(), {.name = name_}));

    STRATA_ASSERT_OK(sut.close({.unlink = true}));

    EXPECT_FALSE(sut.is_open());
    EXPECT_FALSE(std::filesystem::exists(shm_path(name_)));
}

TEST_F(RegionShared, stats_count_touched_pages_and_no_dirty_storage) {
    const std::size_t page = page_size();
    const std::size_t size = 32 * page;
    STRATA_ASSERT_ASSIGN(sut, Region::shared(size, {.name = name_}));
    for (std::size_t i = 0; i < 8; ++i) {
        sut.data()[(4 * i + 1) * page] = std::byte{7};
    }

    const auto stats = sut.stats();

    STRATA_ASSERT_OK(stats);
    EXPECT_EQ(stats->size, size);
    EXPECT_EQ(stats->memory_bytes, size);
    EXPECT_EQ(stats->storage_bytes, 0U);
    EXPECT_EQ(stats->resident_bytes, 8 * page);
    EXPECT_EQ(stats->dirty_bytes, 0U);
}

TEST_F(RegionShared, a_moved_region_keeps_its_name_and_segment) {
    STRATA_ASSERT_ASSIGN(sut, Region::shared(page_size(), {.name = name_}));
    strata::test::fill_pattern(sut.bytes(), 6);

    Region moved(std::move(sut));

    EXPECT_EQ(moved.name(), name_);
    EXPECT_EQ(moved.kind(), RegionKind::shared);
    EXPECT_EQ(strata::test::pattern_mismatch(moved.bytes(), 6), "");
    STRATA_ASSERT_OK(moved.close({.unlink = true}));
    EXPECT_FALSE(std::filesystem::exists(shm_path(name_)));
}

}  // namespace
