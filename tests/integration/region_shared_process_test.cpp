// SPDX-License-Identifier: MIT
// Shared regions between processes: a segment created in one process is
// opened by name in another, stores are visible both ways, create_only on a
// name another process made is refused without touching the segment, and a
// created segment is private to its owner (0600) unless asked otherwise.
#include <cstddef>
#include <filesystem>
#include <span>
#include <string>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "strata/region.hpp"
#include "support/process.hpp"
#include "support/resources.hpp"
#include "support/result.hpp"

namespace {

using strata::Errc;
using strata::OpenMode;
using strata::Region;
using strata::test::fails_with;
using strata::test::page_size;
using strata::test::pattern_mismatch;
using strata::test::run_in_child;
using strata::test::shm_path;

class RegionSharedProcesses : public ::testing::Test {
protected:
    std::string name_ = strata::test::unique_name();
    strata::test::ShmCleanup cleanup_{name_};
};

TEST_F(RegionSharedProcesses, a_child_opens_the_segment_by_name_and_the_parent_sees_its_stores) {
    const std::size_t size = 16 * page_size();
    STRATA_ASSERT_ASSIGN(sut, Region::shared(size, {.name = name_}));

    const auto child = run_in_child([&] {
        auto opened = Region::shared(0, {.name = name_, .mode = OpenMode::open_only});
        STRATA_CHILD_CHECK_OK(opened);
        STRATA_CHILD_CHECK(opened->size() == size);
        strata::test::fill_pattern(opened->bytes(), 1);
        return 0;
    });

    ASSERT_TRUE(child.succeeded()) << child.describe();
    EXPECT_EQ(pattern_mismatch(sut.bytes(), 1), "");
    EXPECT_TRUE(std::filesystem::exists(shm_path(name_)));
}

TEST_F(RegionSharedProcesses, two_processes_writing_disjoint_halves_each_see_the_whole) {
    const std::size_t half = 8 * page_size();
    STRATA_ASSERT_ASSIGN(sut, Region::shared(2 * half, {.name = name_}));
    strata::test::fill_pattern(sut.bytes().subspan(0, half), 2);

    const auto child = run_in_child([&] {
        auto opened = Region::shared(2 * half, {.name = name_, .mode = OpenMode::open_or_create});
        STRATA_CHILD_CHECK_OK(opened);
        strata::test::fill_pattern(opened->bytes().subspan(half), 2, half);
        STRATA_CHILD_CHECK(pattern_mismatch(opened->bytes(), 2).empty());
        return 0;
    });

    ASSERT_TRUE(child.succeeded()) << child.describe();
    EXPECT_EQ(pattern_mismatch(sut.bytes(), 2), "");
}

TEST_F(RegionSharedProcesses, a_segment_outlives_the_child_that_created_it_until_unlinked) {
    const std::size_t size = 4 * page_size();

    const auto child = run_in_child([&] {
        auto created = Region::shared(size, {.name = name_});
        STRATA_CHILD_CHECK_OK(created);
        strata::test::fill_pattern(created->bytes(), 3);
        return 0;
    });
    ASSERT_TRUE(child.succeeded()) << child.describe();
    STRATA_ASSERT_ASSIGN(sut, Region::shared(0, {.name = name_, .mode = OpenMode::open_only}));

    EXPECT_EQ(sut.size(), size);
    EXPECT_EQ(pattern_mismatch(sut.bytes(), 3), "");
    STRATA_ASSERT_OK(sut.close({.unlink = true}));
    EXPECT_FALSE(std::filesystem::exists(shm_path(name_)));
}

TEST_F(RegionSharedProcesses, create_only_on_a_name_another_process_created_is_already_exists_and_leaves_it_untouched) {
    const std::size_t size = 4 * page_size();
    const auto child = run_in_child([&] {
        auto created = Region::shared(size, {.name = name_});
        STRATA_CHILD_CHECK_OK(created);
        strata::test::fill_pattern(created->bytes(), 4);
        return 0;
    });
    ASSERT_TRUE(child.succeeded()) << child.describe();

    const auto sut = Region::shared(3 * size, {.name = name_, .mode = OpenMode::create_only});

    EXPECT_TRUE(fails_with(sut, Errc::already_exists, {"name", name_}));
    EXPECT_EQ(strata::test::file_size(shm_path(name_)), size);
    STRATA_ASSERT_ASSIGN(existing, Region::shared(0, {.name = name_, .mode = OpenMode::open_only}));
    EXPECT_EQ(existing.size(), size);
    EXPECT_EQ(pattern_mismatch(existing.bytes(), 4), "");
}

TEST_F(RegionSharedProcesses, a_name_with_a_slash_is_invalid_argument_and_creates_nothing) {
    const std::string bad = name_ + "/part";

    const auto sut = Region::shared(page_size(), {.name = bad, .mode = OpenMode::open_or_create});

    EXPECT_TRUE(fails_with(sut, Errc::invalid_argument, {"name", bad}));
    EXPECT_FALSE(std::filesystem::exists(shm_path(name_)));
}

TEST_F(RegionSharedProcesses, a_created_segment_is_readable_and_writable_by_its_owner_only_by_default) {
    STRATA_ASSERT_ASSIGN(sut, Region::shared(page_size(), {.name = name_}));

    const int fd = ::open(shm_path(name_).c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    struct stat st {};
    const int stat_result = ::fstat(fd, &st);
    ::close(fd);

    ASSERT_EQ(stat_result, 0);
    EXPECT_EQ(st.st_mode & 07777U, 0600U);
    EXPECT_EQ(st.st_uid, ::geteuid());
}

}  // namespace
