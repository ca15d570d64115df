// SPDX-License-Identifier: MIT
// Storage regions on a block device: a loop device over a 64 MiB file, mapped
// at an offset, written, synced and read back through the device and through
// the backing file with pread; ranges past the end and unlink are refused.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "strata/region.hpp"
#include "support/capability.hpp"
#include "support/resources.hpp"
#include "support/result.hpp"
#include "support/system.hpp"

namespace {

using strata::Errc;
using strata::Region;
using strata::RegionKind;
using strata::StorageOptions;
using strata::Writeback;
using strata::test::fails_with;
using strata::test::pattern_mismatch;
using strata::test::read_file;

constexpr std::uint64_t mib = std::uint64_t{1} << 20U;
constexpr std::uint64_t device_size = 64 * mib;

class RegionBlockDevice : public ::testing::TestWithParam<Writeback> {
protected:
    void SetUp() override {
        STRATA_REQUIRE(strata::test::has_loop_devices(), "root, /dev/loop-control and losetup");
        const int fd = ::open(backing_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        ASSERT_GE(fd, 0) << "creating " << backing_;
        const int truncated = ::ftruncate(fd, static_cast<off_t>(device_size));
        ::close(fd);
        ASSERT_EQ(truncated, 0);
        loop_ = std::make_unique<strata::test::LoopDevice>(backing_);
        ASSERT_TRUE(loop_->ok()) << loop_->error();
    }

    [[nodiscard]] const std::filesystem::path& device() const { return loop_->device(); }
    [[nodiscard]] StorageOptions options(std::uint64_t offset) const {
        return {.path = device(), .offset = offset, .writeback = GetParam()};
    }

    strata::test::TempDir dir_;
    std::filesystem::path backing_ = dir_ / "backing.img";
    std::unique_ptr<strata::test::LoopDevice> loop_;
};

std::string writeback_name(const ::testing::TestParamInfo<Writeback>& param_info) {
    return std::string(strata::to_string(param_info.param));
}

INSTANTIATE_TEST_SUITE_P(Writeback, RegionBlockDevice, ::testing::Values(Writeback::kernel, Writeback::explicit_sync),
                         writeback_name);

TEST_P(RegionBlockDevice, a_region_at_an_offset_writes_through_to_the_device_after_sync) {
    const std::uint64_t offset = 8 * mib;
    const std::size_t size = mib + 3 * strata::test::page_size();

    {
        STRATA_ASSERT_ASSIGN(sut, Region::storage(size, options(offset)));
        EXPECT_EQ(sut.kind(), RegionKind::storage);
        EXPECT_EQ(sut.path(), device());
        EXPECT_EQ(sut.storage_bytes(), size);
        strata::test::fill_pattern(sut.bytes(), 1);
        STRATA_ASSERT_OK(sut.sync());
        STRATA_ASSERT_OK(sut.close());
    }

    const auto through_device = read_file(device(), offset - mib, size + 2 * mib);
    const auto in_backing_file = read_file(backing_, offset, size);
    ASSERT_EQ(through_device.size(), size + 2 * mib);
    EXPECT_EQ(strata::test::nonzero_byte(std::span(through_device).subspan(0, mib)), "");
    EXPECT_EQ(pattern_mismatch(std::span(through_device).subspan(mib, size), 1), "");
    EXPECT_EQ(strata::test::nonzero_byte(std::span(through_device).subspan(mib + size)), "");
    EXPECT_EQ(pattern_mismatch(in_backing_file, 1), "");
}

TEST_P(RegionBlockDevice, a_read_only_region_maps_what_the_device_holds) {
    const std::uint64_t offset = 4 * mib;
    const std::size_t size = 2 * mib;
    strata::test::write_file(device(), offset, strata::test::make_pattern(size, 2));
    StorageOptions opts = options(offset);
    opts.read_only = true;

    STRATA_ASSERT_ASSIGN(sut, Region::storage(size, opts));

    EXPECT_EQ(pattern_mismatch(sut.bytes(), 2), "");
}

TEST_P(RegionBlockDevice, a_range_past_the_end_of_the_device_is_invalid_argument_naming_offset) {
    const std::uint64_t near_end = device_size - mib;

    EXPECT_TRUE(fails_with(Region::storage(2 * mib, options(near_end)), Errc::invalid_argument,
                           {"offset", std::to_string(near_end)}));
    EXPECT_TRUE(fails_with(Region::storage(4096, options(device_size)), Errc::invalid_argument,
                           {"offset", std::to_string(device_size)}));
}

TEST_P(RegionBlockDevice, a_range_ending_exactly_at_the_end_of_the_device_is_accepted) {
    const std::uint64_t offset = device_size - mib;

    STRATA_ASSERT_ASSIGN(sut, Region::storage(mib, options(offset)));
    strata::test::fill_pattern(sut.bytes(), 3);
    STRATA_ASSERT_OK(sut.sync());

    EXPECT_EQ(pattern_mismatch(read_file(device(), offset, mib), 3), "");
}

TEST_P(RegionBlockDevice, unlink_on_a_block_device_is_refused_and_the_region_stays_open) {
    const std::uint64_t offset = 2 * mib;
    const std::size_t size = mib;
    STRATA_ASSERT_ASSIGN(sut, Region::storage(size, options(offset)));
    strata::test::fill_pattern(sut.bytes(), 4);

    EXPECT_TRUE(fails_with(sut.close({.unlink = true}), Errc::invalid_argument, {"unlink"}));

    ASSERT_TRUE(sut.is_open());
    EXPECT_TRUE(std::filesystem::is_block_file(device()));
    EXPECT_EQ(pattern_mismatch(sut.bytes(), 4), "");
    STRATA_ASSERT_OK(sut.sync());
    STRATA_ASSERT_OK(sut.close());
    EXPECT_EQ(pattern_mismatch(read_file(device(), offset, size), 4), "");
}

}  // namespace
