// SPDX-License-Identifier: MIT
// Direct write-back regions whose storage part the kernel tracks (userfaultfd
// in asynchronous write-protect mode and PAGEMAP_SCAN, Linux 6.7+):
// write_changed() writes exactly the pages stored to since the last pass,
// leaves the tail of a run for later when asked, and the pages keep their
// contents. The file is read back with pread, independently of strata.
#include <cstddef>
#include <cstdio>
#include <filesystem>

#include <sys/utsname.h>

#include <gtest/gtest.h>

#include "strata/region.hpp"
#include "support/capability.hpp"
#include "support/resources.hpp"
#include "support/result.hpp"

namespace {

using strata::Region;
using strata::StorageOptions;
using strata::Writeback;
using strata::test::page_size;
using strata::test::pattern_mismatch;
using strata::test::read_file;

bool kernel_tracks_stores() {
    utsname u{};
    int major = 0;
    int minor = 0;
    return ::uname(&u) == 0 && std::sscanf(u.release, "%d.%d", &major, &minor) == 2 &&
           (major > 6 || (major == 6 && minor >= 7));
}

class RegionDirectTracking : public ::testing::Test {
protected:
    void SetUp() override { STRATA_REQUIRE(kernel_tracks_stores(), "Linux 6.7 or later (UFFD_FEATURE_WP_ASYNC)"); }

    strata::test::TempDir dir_;
    std::filesystem::path path_ = dir_ / "data.bin";
    StorageOptions options_{.path = path_, .writeback = Writeback::direct};
};

TEST_F(RegionDirectTracking, a_direct_region_over_a_new_file_tracks_stores) {
    STRATA_ASSERT_ASSIGN(sut, Region::storage(16 * page_size(), options_));
    EXPECT_TRUE(sut.tracks_writes());
    STRATA_ASSERT_ASSIGN(nothing, sut.write_changed());
    EXPECT_EQ(nothing, 0U) << "a fresh region has nothing to write";
}

TEST_F(RegionDirectTracking, write_changed_writes_only_the_pages_stored_to_since_the_last_pass) {
    const std::size_t page = page_size();
    STRATA_ASSERT_ASSIGN(sut, Region::storage(16 * page, options_));
    strata::test::fill_pattern(sut.bytes().subspan(0, 4 * page), 1);

    STRATA_ASSERT_ASSIGN(first, sut.write_changed());
    EXPECT_EQ(first, 4 * page);
    EXPECT_EQ(pattern_mismatch(read_file(path_, 0, 4 * page), 1), "");
    STRATA_ASSERT_ASSIGN(again, sut.write_changed());
    EXPECT_EQ(again, 0U) << "nothing was stored since the last pass";

    // A store into a page already written marks it again; its neighbours stay clean.
    sut.bytes()[2 * page + 5] = std::byte{0x5A};
    STRATA_ASSERT_ASSIGN(one, sut.write_changed());
    EXPECT_EQ(one, page);
    EXPECT_EQ(read_file(path_, 2 * page + 5, 1).at(0), std::byte{0x5A});
    EXPECT_EQ(sut.bytes()[2 * page + 5], std::byte{0x5A}) << "the region lost its contents";
    STRATA_ASSERT_OK(sut.sync());
}

TEST_F(RegionDirectTracking, keep_tail_leaves_the_end_of_a_run_for_the_next_pass) {
    const std::size_t page = page_size();
    STRATA_ASSERT_ASSIGN(sut, Region::storage(16 * page, options_));
    strata::test::fill_pattern(sut.bytes().subspan(0, 6 * page), 2);

    STRATA_ASSERT_ASSIGN(head, sut.write_changed(2 * page));
    EXPECT_EQ(head, 4 * page) << "the last two pages of the run should wait";
    STRATA_ASSERT_ASSIGN(tail, sut.write_changed());
    EXPECT_EQ(tail, 2 * page);
    EXPECT_EQ(pattern_mismatch(read_file(path_, 0, 6 * page), 2), "");
}

TEST_F(RegionDirectTracking, sync_after_write_changed_keeps_every_store_in_the_file) {
    const std::size_t size = 8 * page_size() + 100;
    STRATA_ASSERT_ASSIGN(sut, Region::storage(size, options_));
    strata::test::fill_pattern(sut.bytes(), 3);
    STRATA_ASSERT_ASSIGN(written, sut.write_changed());
    EXPECT_GT(written, 0U);
    STRATA_ASSERT_OK(sut.sync());
    STRATA_ASSERT_OK(sut.close());
    EXPECT_EQ(pattern_mismatch(read_file(path_, 0, size), 3), "");
}

}  // namespace
