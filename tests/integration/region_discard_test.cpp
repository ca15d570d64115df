// SPDX-License-Identifier: MIT
// close({.discard = true}): with explicit_sync the changes since the last sync
// never reach the file; with kernel write-back close() refuses and the region
// stays open and usable.
#include <cstddef>
#include <cstdint>
#include <filesystem>

#include <gtest/gtest.h>

#include "strata/region.hpp"
#include "support/resources.hpp"
#include "support/result.hpp"

namespace {

using strata::Errc;
using strata::Factor;
using strata::Region;
using strata::Writeback;
using strata::test::fails_with;
using strata::test::page_size;
using strata::test::pattern_mismatch;
using strata::test::read_file;

class RegionDiscard : public ::testing::Test {
protected:
    strata::test::TempDir dir_;
    std::filesystem::path path_ = dir_ / "discard.bin";
};

TEST_F(RegionDiscard, explicit_sync_discard_drops_the_stores_made_since_the_last_sync) {
    const std::size_t size = 16 * page_size() + 5;
    STRATA_ASSERT_ASSIGN(sut, Region::storage(size, {.path = path_, .writeback = Writeback::explicit_sync}));
    strata::test::fill_pattern(sut.bytes(), 1);
    STRATA_ASSERT_OK(sut.sync());
    strata::test::fill_pattern(sut.bytes(), 2);

    STRATA_ASSERT_OK(sut.close({.discard = true}));

    EXPECT_FALSE(sut.is_open());
    EXPECT_EQ(pattern_mismatch(read_file(path_, 0, size), 1), "");
}

TEST_F(RegionDiscard, discard_without_any_sync_leaves_an_existing_file_as_it_was) {
    const std::size_t size = 8 * page_size();
    strata::test::write_file(path_, 0, strata::test::make_pattern(size, 3));
    STRATA_ASSERT_ASSIGN(sut, Region::storage(size, {.path = path_, .writeback = Writeback::explicit_sync}));
    strata::test::fill_pattern(sut.bytes(), 4);

    STRATA_ASSERT_OK(sut.close({.discard = true}));

    EXPECT_EQ(pattern_mismatch(read_file(path_, 0, size), 3), "");
}

TEST_F(RegionDiscard, discard_of_a_combined_region_keeps_the_last_synced_storage_part) {
    const std::size_t page = page_size();
    const std::size_t size = 16 * page;
    STRATA_ASSERT_ASSIGN(sut, Region::combined(size, {.storage = {.path = path_, .writeback = Writeback::explicit_sync},
                                                      .factor = Factor::fixed(0.25)}));
    ASSERT_EQ(sut.storage_bytes(), 12 * page);
    strata::test::fill_pattern(sut.bytes(), 5);
    STRATA_ASSERT_OK(sut.sync());
    strata::test::fill_pattern(sut.bytes(), 6);

    STRATA_ASSERT_OK(sut.close({.discard = true}));

    EXPECT_EQ(pattern_mismatch(read_file(path_, 0, 12 * page), 5, 4 * page), "");
}

TEST_F(RegionDiscard, discard_with_unlink_removes_the_file) {
    STRATA_ASSERT_ASSIGN(sut, Region::storage(page_size(), {.path = path_, .writeback = Writeback::explicit_sync}));

    STRATA_ASSERT_OK(sut.close({.unlink = true, .discard = true}));

    EXPECT_FALSE(std::filesystem::exists(path_));
}

TEST_F(RegionDiscard, kernel_writeback_refuses_discard_and_the_region_stays_open_and_usable) {
    const std::size_t size = 8 * page_size();
    STRATA_ASSERT_ASSIGN(sut, Region::storage(size, {.path = path_, .writeback = Writeback::kernel}));
    strata::test::fill_pattern(sut.bytes(), 1);
    std::byte* const address = sut.data();

    const auto refused = sut.close({.discard = true});

    EXPECT_TRUE(fails_with(refused, Errc::invalid_argument, {"discard", "true"}));
    ASSERT_TRUE(sut.is_open());
    EXPECT_EQ(sut.data(), address);
    EXPECT_EQ(pattern_mismatch(sut.bytes(), 1), "");
    strata::test::fill_pattern(sut.bytes(), 2);
    STRATA_ASSERT_OK(sut.sync());
    STRATA_ASSERT_OK(sut.close());
    EXPECT_EQ(pattern_mismatch(read_file(path_, 0, size), 2), "");
}

TEST_F(RegionDiscard, kernel_writeback_refuses_discard_with_unlink_and_keeps_the_file) {
    STRATA_ASSERT_ASSIGN(sut, Region::combined(8 * page_size(), {.storage = {.path = path_}}));

    EXPECT_TRUE(fails_with(sut.close({.unlink = true, .discard = true}), Errc::invalid_argument, {"discard"}));

    EXPECT_TRUE(sut.is_open());
    EXPECT_TRUE(std::filesystem::exists(path_));
}

}  // namespace
