// SPDX-License-Identifier: MIT
// Dirty tracking is page-granular: sparse stores to a storage region leave
// exactly the stored-to pages dirty, so sync() writes what changed and no
// more (on ext4 with large folios, one store would otherwise dirty up to
// 2 MiB). The temporary directory is on the disk, not tmpfs.
#include <cstddef>

#include <gtest/gtest.h>

#include "strata/region.hpp"
#include "support/resources.hpp"
#include "support/result.hpp"

namespace {

using strata::Region;
using strata::Writeback;
using strata::test::page_size;

class RegionDirtyTracking : public ::testing::TestWithParam<Writeback> {
protected:
    strata::test::TempDir dir_;
};

TEST_P(RegionDirtyTracking, sparse_stores_leave_only_the_stored_to_pages_dirty) {
    const std::size_t pages = 4096;  // 16 MiB, enough for many large folios
    STRATA_ASSERT_ASSIGN(sut,
                         Region::storage(pages * page_size(), {.path = dir_ / "sparse.bin", .writeback = GetParam()}));
    // Read every page first, as an application warming its data would: this is
    // what lets read-ahead fill the page cache with large folios.
    unsigned sum = 0;
    for (std::size_t page = 0; page < pages; ++page) {
        sum += std::to_integer<unsigned>(sut.data()[page * page_size()]);
    }
    EXPECT_EQ(sum, 0U);
    STRATA_ASSERT_OK(sut.sync());
    std::size_t stored_pages = 0;
    for (std::size_t page = 0; page < pages; page += 100) {
        sut.data()[page * page_size()] = std::byte{0x5a};
        ++stored_pages;
    }
    STRATA_ASSERT_ASSIGN(before, sut.stats());
    EXPECT_EQ(before.dirty_bytes, stored_pages * page_size());
    STRATA_ASSERT_OK(sut.sync());
    STRATA_ASSERT_ASSIGN(after, sut.stats());
    EXPECT_EQ(after.dirty_bytes, 0U);
}

TEST_P(RegionDirtyTracking, a_sync_after_a_sync_finds_nothing_dirty) {
    STRATA_ASSERT_ASSIGN(sut,
                         Region::storage(256 * page_size(), {.path = dir_ / "twice.bin", .writeback = GetParam()}));
    sut.data()[0] = std::byte{1};
    STRATA_ASSERT_OK(sut.sync());
    STRATA_ASSERT_OK(sut.sync());
    STRATA_ASSERT_ASSIGN(stats, sut.stats());
    EXPECT_EQ(stats.dirty_bytes, 0U);
    EXPECT_EQ(sut.data()[0], std::byte{1});
}

INSTANTIATE_TEST_SUITE_P(WritebackModes, RegionDirtyTracking,
                         ::testing::Values(Writeback::kernel, Writeback::explicit_sync),
                         [](const auto& param_info) { return std::string(strata::to_string(param_info.param)); });

}  // namespace
