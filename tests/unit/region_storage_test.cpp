// SPDX-License-Identifier: MIT
// Region::storage on regular files in a fresh temporary directory, for both
// write-back modes. The file is read back with pread, independently of strata.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <sys/stat.h>

#include <gtest/gtest.h>

#include "strata/region.hpp"
#include "support/resources.hpp"
#include "support/result.hpp"

namespace {

using strata::Advice;
using strata::Errc;
using strata::Region;
using strata::RegionKind;
using strata::StorageOptions;
using strata::Tier;
using strata::Writeback;
using strata::test::fails_with;
using strata::test::make_pattern;
using strata::test::page_size;
using strata::test::pattern_mismatch;
using strata::test::read_file;

class RegionStorage : public ::testing::TestWithParam<Writeback> {
protected:
    strata::test::TempDir dir_;
    std::filesystem::path path_ = dir_ / "data.bin";

    [[nodiscard]] StorageOptions options(std::uint64_t offset = 0) const {
        return {.path = path_, .offset = offset, .writeback = GetParam()};
    }
};

std::string writeback_name(const ::testing::TestParamInfo<Writeback>& info) {
    return std::string(strata::to_string(info.param));
}

INSTANTIATE_TEST_SUITE_P(Writeback, RegionStorage, ::testing::Values(Writeback::kernel, Writeback::explicit_sync),
                         writeback_name);

TEST_P(RegionStorage, creating_a_region_creates_the_file_with_reserved_space_and_permissions_0600) {
    const std::size_t size = 16 * page_size();

    STRATA_ASSERT_ASSIGN(sut, Region::storage(size, options()));

    const struct stat st = strata::test::stat_of(path_);
    EXPECT_EQ(sut.kind(), RegionKind::storage);
    EXPECT_EQ(sut.size(), size);
    EXPECT_EQ(sut.path(), path_);
    EXPECT_TRUE(sut.name().empty());
    EXPECT_EQ(sut.storage_bytes(), size);
    EXPECT_EQ(sut.memory_bytes(), 0U);
    EXPECT_TRUE(S_ISREG(st.st_mode));
    EXPECT_EQ(static_cast<std::uint64_t>(st.st_size), size);
    EXPECT_GE(static_cast<std::uint64_t>(st.st_blocks) * 512U, size) << "space is not reserved";
    EXPECT_EQ(st.st_mode & 07777U, 0600U);
    EXPECT_EQ(strata::test::nonzero_byte(sut.bytes()), "");
}

TEST_P(RegionStorage, a_created_file_has_the_requested_permissions) {
    StorageOptions opts = options();
    opts.permissions = 0640;

    STRATA_ASSERT_ASSIGN(sut, Region::storage(page_size(), opts));

    EXPECT_EQ(strata::test::permissions_of(path_), 0640U);
}

TEST_P(RegionStorage, synced_stores_are_in_the_file) {
    const std::size_t size = 8 * page_size() + 123;
    STRATA_ASSERT_ASSIGN(sut, Region::storage(size, options()));
    strata::test::fill_pattern(sut.bytes(), 1);

    STRATA_ASSERT_OK(sut.sync());

    EXPECT_EQ(pattern_mismatch(read_file(path_, 0, size), 1), "");
}

TEST_P(RegionStorage, an_offset_maps_the_file_from_that_offset_and_leaves_the_rest_of_the_file_alone) {
    const std::size_t page = page_size();
    const auto original = make_pattern(8 * page, 2);
    strata::test::write_file(path_, 0, original);

    {
        STRATA_ASSERT_ASSIGN(sut, Region::storage(4 * page, options(2 * page)));

        EXPECT_EQ(pattern_mismatch(sut.bytes(), 2, 2 * page), "");
        strata::test::fill_pattern(sut.bytes(), 3);
        STRATA_ASSERT_OK(sut.sync());
    }

    const auto file = read_file(path_, 0, 16 * page);
    ASSERT_EQ(file.size(), 8 * page) << "the file was resized";
    EXPECT_EQ(pattern_mismatch(std::span(file).subspan(0, 2 * page), 2), "");
    EXPECT_EQ(pattern_mismatch(std::span(file).subspan(2 * page, 4 * page), 3), "");
    EXPECT_EQ(pattern_mismatch(std::span(file).subspan(6 * page), 2, 6 * page), "");
}

TEST_P(RegionStorage, a_shorter_existing_file_is_grown_and_keeps_its_bytes) {
    const std::size_t page = page_size();
    strata::test::write_file(path_, 0, make_pattern(page + 10, 4));

    STRATA_ASSERT_ASSIGN(sut, Region::storage(4 * page, options()));

    EXPECT_EQ(strata::test::file_size(path_), 4 * page);
    EXPECT_EQ(pattern_mismatch(sut.bytes().subspan(0, page + 10), 4), "");
    EXPECT_EQ(strata::test::nonzero_byte(sut.bytes().subspan(page + 10)), "");
}

TEST_P(RegionStorage, sync_async_followed_by_sync_makes_the_stores_durable) {
    const std::size_t size = 8 * page_size();
    STRATA_ASSERT_ASSIGN(sut, Region::storage(size, options()));
    strata::test::fill_pattern(sut.bytes(), 5);

    STRATA_ASSERT_OK(sut.sync_async());
    STRATA_ASSERT_OK(sut.sync_async(page_size(), 2 * page_size()));
    STRATA_ASSERT_OK(sut.sync());

    EXPECT_EQ(pattern_mismatch(read_file(path_, 0, size), 5), "");
}

TEST_P(RegionStorage, stats_report_dirty_bytes_until_sync) {
    const std::size_t page = page_size();
    const std::size_t size = 16 * page;
    STRATA_ASSERT_ASSIGN(sut, Region::storage(size, options()));
    // Without read-ahead a fault brings in its own page only, so residency is exact.
    STRATA_ASSERT_OK(sut.advise(Advice::random));
    for (const std::size_t index : {0U, 3U, 7U, 12U}) {
        sut.data()[index * page + 5] = std::byte{9};
    }

    const auto before = sut.stats();
    STRATA_ASSERT_OK(sut.sync());
    const auto after = sut.stats();

    STRATA_ASSERT_OK(before);
    STRATA_ASSERT_OK(after);
    EXPECT_EQ(before->size, size);
    EXPECT_EQ(before->storage_bytes, size);
    EXPECT_EQ(before->memory_bytes, 0U);
    EXPECT_EQ(before->resident_bytes, 4 * page);
    EXPECT_EQ(before->dirty_bytes, 4 * page);
    EXPECT_EQ(after->dirty_bytes, 0U);
}

TEST_P(RegionStorage, a_partial_sync_leaves_the_rest_dirty) {
    const std::size_t page = page_size();
    STRATA_ASSERT_ASSIGN(sut, Region::storage(8 * page, options()));
    strata::test::fill_pattern(sut.bytes(), 6);

    STRATA_ASSERT_OK(sut.sync(2 * page, 3 * page));
    const auto stats = sut.stats();

    STRATA_ASSERT_OK(stats);
    EXPECT_EQ(stats->dirty_bytes, 5 * page);
}

TEST_P(RegionStorage, every_byte_is_placed_on_storage) {
    const std::size_t size = 4 * page_size();
    STRATA_ASSERT_ASSIGN(sut, Region::storage(size, options()));

    for (const std::size_t offset : {std::size_t{0}, page_size() + 9, size - 1}) {
        const auto tier = sut.placement(sut.data() + offset);
        STRATA_ASSERT_OK(tier);
        EXPECT_EQ(*tier, Tier::storage) << "offset " << offset;
    }
}

TEST_P(RegionStorage, every_advice_is_accepted_and_keeps_the_data) {
    const std::size_t page = page_size();
    const std::size_t size = 16 * page;
    STRATA_ASSERT_ASSIGN(sut, Region::storage(size, options()));
    strata::test::fill_pattern(sut.bytes(), 7);

    for (const Advice advice :
         {Advice::normal, Advice::sequential, Advice::random, Advice::read_mostly, Advice::write_mostly}) {
        STRATA_EXPECT_OK(sut.advise(advice)) << " advice " << strata::to_string(advice);
        STRATA_EXPECT_OK(sut.advise(advice, 5 * page, 3 * page)) << " advice " << strata::to_string(advice);
    }
    EXPECT_EQ(pattern_mismatch(sut.bytes(), 7), "");
    STRATA_ASSERT_OK(sut.sync());

    EXPECT_EQ(pattern_mismatch(read_file(path_, 0, size), 7), "");
}

TEST_P(RegionStorage, close_keeps_the_file_with_the_stores) {
    const std::size_t size = 4 * page_size();
    STRATA_ASSERT_ASSIGN(sut, Region::storage(size, options()));
    strata::test::fill_pattern(sut.bytes(), 1);

    STRATA_ASSERT_OK(sut.close());

    EXPECT_FALSE(sut.is_open());
    EXPECT_EQ(pattern_mismatch(read_file(path_, 0, size), 1), "");
}

TEST_P(RegionStorage, destruction_writes_the_stores_back_like_close) {
    const std::size_t size = 4 * page_size();
    {
        STRATA_ASSERT_ASSIGN(sut, Region::storage(size, options()));
        strata::test::fill_pattern(sut.bytes(), 2);
    }

    EXPECT_EQ(pattern_mismatch(read_file(path_, 0, size), 2), "");
}

TEST_P(RegionStorage, close_with_unlink_removes_the_file) {
    STRATA_ASSERT_ASSIGN(sut, Region::storage(page_size(), options()));

    STRATA_ASSERT_OK(sut.close({.unlink = true}));

    EXPECT_FALSE(sut.is_open());
    EXPECT_FALSE(std::filesystem::exists(path_));
}

TEST_P(RegionStorage, a_moved_region_keeps_its_file_and_syncs_it) {
    const std::size_t size = 4 * page_size();
    STRATA_ASSERT_ASSIGN(sut, Region::storage(size, options()));

    Region moved(std::move(sut));
    strata::test::fill_pattern(moved.bytes(), 3);

    EXPECT_EQ(moved.path(), path_);
    EXPECT_EQ(moved.kind(), RegionKind::storage);
    STRATA_ASSERT_OK(moved.sync());
    EXPECT_EQ(pattern_mismatch(read_file(path_, 0, size), 3), "");
}

TEST_P(RegionStorage, a_read_only_region_maps_the_existing_bytes_and_leaves_the_file_unchanged) {
    const std::size_t page = page_size();
    strata::test::write_file(path_, 0, make_pattern(6 * page, 4));
    StorageOptions opts = options(page);
    opts.read_only = true;

    STRATA_ASSERT_ASSIGN(sut, Region::storage(4 * page, opts));
    const auto stats = sut.stats();
    STRATA_ASSERT_OK(sut.sync());
    STRATA_ASSERT_OK(sut.close());

    STRATA_ASSERT_OK(stats);
    EXPECT_EQ(stats->dirty_bytes, 0U);
    EXPECT_EQ(pattern_mismatch(read_file(path_, 0, 8 * page), 4), "");
    EXPECT_EQ(strata::test::file_size(path_), 6 * page);
}

TEST_P(RegionStorage, a_read_only_region_of_a_missing_file_is_not_found_and_creates_nothing) {
    StorageOptions opts = options();
    opts.read_only = true;

    EXPECT_TRUE(fails_with(Region::storage(page_size(), opts), Errc::not_found, {"path", path_.string()}));
    EXPECT_FALSE(std::filesystem::exists(path_));
}

TEST_P(RegionStorage, a_read_only_region_beyond_the_end_of_the_file_is_invalid_argument_and_leaves_it) {
    const std::size_t page = page_size();
    strata::test::write_file(path_, 0, make_pattern(2 * page, 5));
    StorageOptions opts = options(page);
    opts.read_only = true;

    EXPECT_TRUE(fails_with(Region::storage(2 * page, opts), Errc::invalid_argument, {path_.string()}));
    EXPECT_EQ(strata::test::file_size(path_), 2 * page);
}

TEST_P(RegionStorage, zero_size_is_invalid_argument_naming_size_and_creates_nothing) {
    EXPECT_TRUE(fails_with(Region::storage(0, options()), Errc::invalid_argument, {"size", "0"}));
    EXPECT_FALSE(std::filesystem::exists(path_));
}

TEST_P(RegionStorage, an_offset_off_the_page_grid_is_invalid_argument_naming_offset_and_creates_nothing) {
    const std::uint64_t offset = page_size() + 100;

    EXPECT_TRUE(fails_with(Region::storage(page_size(), options(offset)), Errc::invalid_argument,
                           {"offset", std::to_string(offset)}));
    EXPECT_FALSE(std::filesystem::exists(path_));
}

TEST_P(RegionStorage, an_empty_path_is_invalid_argument_naming_path) {
    StorageOptions opts = options();
    opts.path.clear();

    EXPECT_TRUE(fails_with(Region::storage(page_size(), opts), Errc::invalid_argument, {"path"}));
}

TEST_P(RegionStorage, a_directory_as_path_is_invalid_argument_naming_it) {
    StorageOptions opts = options();
    opts.path = dir_.path();

    EXPECT_TRUE(fails_with(Region::storage(page_size(), opts), Errc::invalid_argument, {"path", dir_.path().string()}));
}

TEST_P(RegionStorage, sync_and_advice_beyond_the_end_are_invalid_argument_naming_the_range) {
    const std::size_t size = 4 * page_size();
    STRATA_ASSERT_ASSIGN(sut, Region::storage(size, options()));

    EXPECT_TRUE(fails_with(sut.sync(size + 1, 0), Errc::invalid_argument, {"offset", std::to_string(size + 1)}));
    EXPECT_TRUE(fails_with(sut.sync(page_size(), size), Errc::invalid_argument, {"length", std::to_string(size)}));
    EXPECT_TRUE(fails_with(sut.sync(1, std::numeric_limits<std::size_t>::max()), Errc::invalid_argument, {"length"}));
    EXPECT_TRUE(fails_with(sut.advise(Advice::sequential, size + 1, 1), Errc::invalid_argument,
                           {"offset", std::to_string(size + 1)}));
}

// The two write-back modes differ in when stores reach the file.

class RegionStorageKernelWriteback : public ::testing::Test {
protected:
    strata::test::TempDir dir_;
    std::filesystem::path path_ = dir_ / "kernel.bin";
};

TEST_F(RegionStorageKernelWriteback, stores_reach_the_file_before_any_sync) {
    const std::size_t size = 4 * page_size();
    STRATA_ASSERT_ASSIGN(sut, Region::storage(size, {.path = path_}));

    strata::test::fill_pattern(sut.bytes(), 1);

    EXPECT_EQ(pattern_mismatch(read_file(path_, 0, size), 1), "");
}

class RegionStorageExplicitSync : public ::testing::Test {
protected:
    strata::test::TempDir dir_;
    std::filesystem::path path_ = dir_ / "explicit.bin";

    [[nodiscard]] StorageOptions options() const { return {.path = path_, .writeback = Writeback::explicit_sync}; }
};

TEST_F(RegionStorageExplicitSync, stores_stay_in_the_process_until_sync) {
    const std::size_t size = 4 * page_size();
    STRATA_ASSERT_ASSIGN(sut, Region::storage(size, options()));
    strata::test::fill_pattern(sut.bytes(), 2);

    const auto before_sync = read_file(path_, 0, size);
    STRATA_ASSERT_OK(sut.sync());
    const auto after_sync = read_file(path_, 0, size);

    EXPECT_EQ(before_sync.size(), size);
    EXPECT_EQ(strata::test::nonzero_byte(before_sync), "");
    EXPECT_EQ(pattern_mismatch(after_sync, 2), "");
}

TEST_F(RegionStorageExplicitSync, sync_of_a_range_writes_that_range_only) {
    const std::size_t page = page_size();
    const std::size_t size = 8 * page;
    STRATA_ASSERT_ASSIGN(sut, Region::storage(size, options()));
    strata::test::fill_pattern(sut.bytes(), 3);

    STRATA_ASSERT_OK(sut.sync(2 * page, 3 * page));

    const auto file = read_file(path_, 0, size);
    ASSERT_EQ(file.size(), size);
    EXPECT_EQ(strata::test::nonzero_byte(std::span(file).subspan(0, 2 * page)), "");
    EXPECT_EQ(pattern_mismatch(std::span(file).subspan(2 * page, 3 * page), 3, 2 * page), "");
    EXPECT_EQ(strata::test::nonzero_byte(std::span(file).subspan(5 * page)), "");
}

TEST_F(RegionStorageExplicitSync, sync_of_an_unaligned_range_writes_the_pages_it_touches) {
    const std::size_t page = page_size();
    const std::size_t size = 8 * page;
    STRATA_ASSERT_ASSIGN(sut, Region::storage(size, options()));
    strata::test::fill_pattern(sut.bytes(), 4);

    STRATA_ASSERT_OK(sut.sync(3 * page + 100, page));

    const auto file = read_file(path_, 0, size);
    ASSERT_EQ(file.size(), size);
    EXPECT_EQ(strata::test::nonzero_byte(std::span(file).subspan(0, 3 * page)), "");
    EXPECT_EQ(pattern_mismatch(std::span(file).subspan(3 * page + 100, page), 4, 3 * page + 100), "");
    EXPECT_EQ(strata::test::nonzero_byte(std::span(file).subspan(5 * page)), "");
}

TEST_F(RegionStorageExplicitSync, later_stores_reach_the_file_only_at_the_next_sync) {
    const std::size_t size = 4 * page_size();
    STRATA_ASSERT_ASSIGN(sut, Region::storage(size, options()));
    strata::test::fill_pattern(sut.bytes(), 5);
    STRATA_ASSERT_OK(sut.sync());

    strata::test::fill_pattern(sut.bytes(), 6);
    const auto between = read_file(path_, 0, size);
    STRATA_ASSERT_OK(sut.sync());

    EXPECT_EQ(pattern_mismatch(between, 5), "");
    EXPECT_EQ(pattern_mismatch(read_file(path_, 0, size), 6), "");
    EXPECT_EQ(pattern_mismatch(sut.bytes(), 6), "");
}

}  // namespace

namespace {

TEST_P(RegionStorage, rolling_back_removes_a_file_the_region_created_and_writes_nothing) {
    STRATA_ASSERT_ASSIGN(sut, Region::storage(8 * page_size(), options()));
    strata::test::fill_pattern(sut.bytes(), 7);

    STRATA_ASSERT_OK(sut.close({.roll_back = true}));

    EXPECT_FALSE(std::filesystem::exists(path_));
}

TEST_P(RegionStorage, rolling_back_shrinks_a_grown_file_to_its_old_size_and_keeps_its_old_bytes) {
    const std::vector<std::byte> old = make_pattern(2 * page_size(), 3);
    strata::test::write_file(path_, 0, old);

    STRATA_ASSERT_ASSIGN(sut, Region::storage(4 * page_size(), options(2 * page_size())));
    strata::test::fill_pattern(sut.bytes(), 9);
    STRATA_ASSERT_OK(sut.close({.roll_back = true}));

    EXPECT_EQ(std::filesystem::file_size(path_), 2 * page_size());
    EXPECT_EQ(read_file(path_, 0, old.size()), old);
}

TEST_P(RegionStorage, rolling_back_leaves_a_file_that_someone_else_grew_further) {
    STRATA_ASSERT_ASSIGN(first, Region::storage(2 * page_size(), options()));
    STRATA_ASSERT_ASSIGN(later, Region::storage(2 * page_size(), options(4 * page_size())));

    STRATA_ASSERT_OK(first.close({.roll_back = true}));

    EXPECT_TRUE(std::filesystem::exists(path_)) << "the file another region grew was removed";
    EXPECT_EQ(std::filesystem::file_size(path_), 6 * page_size());
    STRATA_ASSERT_OK(later.close());
}

TEST_P(RegionStorage, rolling_back_does_not_remove_a_file_that_replaced_the_created_one) {
    STRATA_ASSERT_ASSIGN(sut, Region::storage(2 * page_size(), options()));
    std::filesystem::remove(path_);
    strata::test::write_file(path_, 0, make_pattern(page_size(), 1));

    STRATA_ASSERT_OK(sut.close({.roll_back = true}));

    EXPECT_TRUE(std::filesystem::exists(path_));
}

TEST_P(RegionStorage, rolling_back_together_with_unlink_is_refused_and_the_region_stays_open) {
    STRATA_ASSERT_ASSIGN(sut, Region::storage(2 * page_size(), options()));

    EXPECT_TRUE(
        fails_with(sut.close({.unlink = true, .roll_back = true}), Errc::invalid_argument, {"roll_back", "unlink"}));
    EXPECT_TRUE(sut.is_open());
}

}  // namespace
