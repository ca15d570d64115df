// SPDX-License-Identifier: MIT
// Storage regions on file systems that refuse them: a full tmpfs or ext4
// (no_space, nothing left behind, an existing file shrunk back), a read-only mount
// (permission_denied, nothing created) and a missing parent directory (not_found).
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include <sys/mount.h>
#include <sys/statvfs.h>

#include <gtest/gtest.h>

#include "strata/region.hpp"
#include "support/capability.hpp"
#include "support/process.hpp"
#include "support/resources.hpp"
#include "support/result.hpp"
#include "support/system.hpp"

namespace {

using strata::Errc;
using strata::Factor;
using strata::Region;
using strata::test::fails_with;
using strata::test::page_size;
using strata::test::pattern_mismatch;

constexpr std::size_t mib = std::size_t{1} << 20U;

std::uint64_t free_blocks(const std::filesystem::path& path) {
    struct statvfs fs {};
    if (::statvfs(path.c_str(), &fs) != 0) {
        return 0;
    }
    return fs.f_bfree;
}

class RegionFullFileSystem : public ::testing::Test {
protected:
    void SetUp() override {
        STRATA_REQUIRE(strata::test::can_mount_tmpfs(), "root and permission to mount a tmpfs");
        mount_ = std::make_unique<strata::test::TmpfsMount>(dir_ / "small", "size=4m");
        ASSERT_TRUE(mount_->ok()) << mount_->error();
    }
    [[nodiscard]] std::filesystem::path in_mount(std::string_view name) const { return mount_->path() / name; }

    strata::test::TempDir dir_;
    std::unique_ptr<strata::test::TmpfsMount> mount_;
};

TEST_F(RegionFullFileSystem, a_region_larger_than_the_free_space_fails_at_creation_with_no_space_and_leaves_no_file) {
    const auto path = in_mount("big.bin");
    const std::uint64_t free_before = free_blocks(mount_->path());
    const auto before = strata::test::snapshot_resources();

    const auto sut = Region::storage(8 * mib, {.path = path});

    EXPECT_TRUE(fails_with(sut, Errc::no_space, {"path", path.string()}));
    ASSERT_FALSE(sut.has_value());
    EXPECT_EQ(sut.error().sys_errno, ENOSPC);
    EXPECT_EQ(strata::test::resources_difference(before, strata::test::snapshot_resources()), "");
    EXPECT_FALSE(std::filesystem::exists(path));
    EXPECT_TRUE(std::filesystem::is_empty(mount_->path()));
    EXPECT_EQ(free_blocks(mount_->path()), free_before);
}

TEST_F(RegionFullFileSystem, a_combined_region_whose_storage_part_does_not_fit_is_no_space_and_leaves_no_file) {
    const auto path = in_mount("combined.bin");
    const auto before = strata::test::snapshot_resources();

    const auto sut = Region::combined(16 * mib, {.storage = {.path = path}, .factor = Factor::fixed(0.5)});

    EXPECT_TRUE(fails_with(sut, Errc::no_space, {"path", path.string()}));
    EXPECT_EQ(strata::test::resources_difference(before, strata::test::snapshot_resources()), "");
    EXPECT_FALSE(std::filesystem::exists(path));
}

TEST_F(RegionFullFileSystem, an_existing_file_grown_by_a_failed_call_is_back_to_its_size_and_content) {
    const auto path = in_mount("existing.bin");
    const std::size_t original = mib + 123;
    strata::test::write_file(path, 0, strata::test::make_pattern(original, 1));
    const std::uint64_t free_before = free_blocks(mount_->path());
    const auto before = strata::test::snapshot_resources();

    const auto sut = Region::storage(8 * mib, {.path = path});

    EXPECT_TRUE(fails_with(sut, Errc::no_space, {"path", path.string()}));
    EXPECT_EQ(strata::test::resources_difference(before, strata::test::snapshot_resources()), "");
    EXPECT_EQ(strata::test::file_size(path), original);
    EXPECT_EQ(pattern_mismatch(strata::test::read_file(path, 0, 2 * original), 1), "");
    EXPECT_EQ(free_blocks(mount_->path()), free_before);
}

TEST_F(RegionFullFileSystem, a_region_that_fits_is_created_on_the_same_file_system) {
    const auto path = in_mount("fits.bin");

    STRATA_ASSERT_ASSIGN(sut, Region::storage(2 * mib, {.path = path}));
    strata::test::fill_pattern(sut.bytes(), 2);
    STRATA_ASSERT_OK(sut.sync());

    EXPECT_EQ(pattern_mismatch(strata::test::read_file(path, 0, 2 * mib), 2), "");
}

class RegionFullExt4 : public ::testing::Test {
protected:
    void SetUp() override {
        STRATA_REQUIRE(strata::test::has_loop_devices() && !strata::test::find_program("mkfs.ext4").empty() &&
                           strata::test::can_mount_tmpfs(),
                       "root, loop devices, mkfs.ext4 and permission to mount");
        mount_ = std::make_unique<strata::test::Ext4Mount>(dir_ / "ext4.img", dir_ / "ext4", 32 * mib);
        ASSERT_TRUE(mount_->ok()) << mount_->error();
    }

    strata::test::TempDir dir_;
    std::unique_ptr<strata::test::Ext4Mount> mount_;
};

TEST_F(RegionFullExt4, an_existing_file_grown_by_a_failed_reservation_is_back_to_its_size_and_content) {
    const auto path = mount_->path() / "existing.bin";
    const std::size_t original = mib + 123;
    strata::test::write_file(path, 0, strata::test::make_pattern(original, 4));
    const auto before = strata::test::snapshot_resources();

    const auto sut = Region::storage(64 * mib, {.path = path});

    EXPECT_TRUE(fails_with(sut, Errc::no_space, {"path", path.string()}));
    EXPECT_EQ(strata::test::resources_difference(before, strata::test::snapshot_resources()), "");
    EXPECT_EQ(strata::test::file_size(path), original);
    EXPECT_EQ(pattern_mismatch(strata::test::read_file(path, 0, 2 * original), 4), "");
}

TEST_F(RegionFullExt4, a_new_file_whose_reservation_fails_is_removed) {
    const auto path = mount_->path() / "new.bin";

    const auto sut = Region::storage(64 * mib, {.path = path});

    EXPECT_TRUE(fails_with(sut, Errc::no_space, {"path", path.string()}));
    EXPECT_FALSE(std::filesystem::exists(path));
}

class RegionReadOnlyFileSystem : public ::testing::Test {
protected:
    void SetUp() override { STRATA_REQUIRE(strata::test::can_mount_tmpfs(), "root and permission to mount a tmpfs"); }

    strata::test::TempDir dir_;
};

TEST_F(RegionReadOnlyFileSystem, a_region_on_a_read_only_mount_is_permission_denied_and_creates_nothing) {
    const strata::test::TmpfsMount mount(dir_ / "ro", "size=1m", MS_RDONLY);
    ASSERT_TRUE(mount.ok()) << mount.error();
    const auto path = mount.path() / "data.bin";
    const auto before = strata::test::snapshot_resources();

    const auto storage = Region::storage(page_size(), {.path = path});
    const auto combined = Region::combined(4 * page_size(), {.storage = {.path = path}});

    EXPECT_TRUE(fails_with(storage, Errc::permission_denied, {"path", path.string()}));
    EXPECT_TRUE(fails_with(combined, Errc::permission_denied, {"path", path.string()}));
    ASSERT_FALSE(storage.has_value());
    EXPECT_EQ(storage.error().sys_errno, EROFS);
    EXPECT_EQ(strata::test::resources_difference(before, strata::test::snapshot_resources()), "");
    EXPECT_FALSE(std::filesystem::exists(path));
}

TEST_F(RegionReadOnlyFileSystem, after_remount_read_only_an_existing_file_maps_read_only_but_not_writable) {
    const strata::test::TmpfsMount mount(dir_ / "remounted", "size=1m");
    ASSERT_TRUE(mount.ok()) << mount.error();
    const auto path = mount.path() / "data.bin";
    const std::size_t size = 4 * page_size();
    strata::test::write_file(path, 0, strata::test::make_pattern(size, 3));
    ASSERT_EQ(mount.remount_read_only(), 0);

    const auto writable = Region::storage(size, {.path = path});
    STRATA_ASSERT_ASSIGN(sut, Region::storage(size, {.path = path, .read_only = true}));

    EXPECT_TRUE(fails_with(writable, Errc::permission_denied, {"path", path.string()}));
    EXPECT_EQ(pattern_mismatch(sut.bytes(), 3), "");
    EXPECT_EQ(strata::test::file_size(path), size);
}

TEST(RegionMissingDirectory, a_path_whose_parent_directory_does_not_exist_is_not_found_naming_the_path) {
    const strata::test::TempDir dir;
    const auto path = dir / "missing" / "data.bin";
    const auto before = strata::test::snapshot_resources();

    const auto storage = Region::storage(page_size(), {.path = path});
    const auto combined = Region::combined(4 * page_size(), {.storage = {.path = path}});

    EXPECT_TRUE(fails_with(storage, Errc::not_found, {"path", path.string()}));
    EXPECT_TRUE(fails_with(combined, Errc::not_found, {"path", path.string()}));
    EXPECT_EQ(strata::test::resources_difference(before, strata::test::snapshot_resources()), "");
    EXPECT_FALSE(std::filesystem::exists(dir / "missing"));
}

}  // namespace
