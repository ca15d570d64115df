// SPDX-License-Identifier: MIT
// Storage regions across process lifetimes: what a child synced is in the file
// after it exits or is killed with SIGKILL, for both write-back modes; what it
// stored after its last sync reaches the file with kernel write-back and does
// not with explicit_sync.
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

#include <gtest/gtest.h>

#include "strata/region.hpp"
#include "support/process.hpp"
#include "support/resources.hpp"
#include "support/result.hpp"

namespace {

using strata::CombinedOptions;
using strata::Factor;
using strata::Region;
using strata::StorageOptions;
using strata::Writeback;
using strata::test::page_size;
using strata::test::pattern_mismatch;
using strata::test::read_file;
using strata::test::run_in_child;

class RegionDurability : public ::testing::TestWithParam<Writeback> {
protected:
    strata::test::TempDir dir_;
    std::filesystem::path path_ = dir_ / "durable.bin";

    [[nodiscard]] StorageOptions options() const { return {.path = path_, .writeback = GetParam()}; }
};

std::string writeback_name(const ::testing::TestParamInfo<Writeback>& param_info) {
    return std::string(strata::to_string(param_info.param));
}

INSTANTIATE_TEST_SUITE_P(Writeback, RegionDurability, ::testing::Values(Writeback::kernel, Writeback::explicit_sync),
                         writeback_name);

TEST_P(RegionDurability, data_synced_by_a_child_that_exits_is_read_back_by_other_processes) {
    const std::size_t size = 32 * page_size() + 17;

    const auto writer = run_in_child([&] {
        auto sut = Region::storage(size, options());
        STRATA_CHILD_CHECK_OK(sut);
        strata::test::fill_pattern(sut->bytes(), 1);
        const auto synced = sut->sync();
        STRATA_CHILD_CHECK_OK(synced);
        return 0;
    });
    const auto reader = run_in_child([&] {
        auto mapped = Region::storage(size, {.path = path_, .read_only = true});
        STRATA_CHILD_CHECK_OK(mapped);
        STRATA_CHILD_CHECK(pattern_mismatch(mapped->bytes(), 1).empty());
        return 0;
    });

    ASSERT_TRUE(writer.succeeded()) << writer.describe();
    EXPECT_TRUE(reader.succeeded()) << reader.describe();
    EXPECT_EQ(pattern_mismatch(read_file(path_, 0, size), 1), "");
}

TEST_P(RegionDurability, data_synced_before_sigkill_is_in_the_file) {
    const std::size_t size = 64 * page_size();

    const auto child = run_in_child([&] {
        auto sut = Region::storage(size, options());
        STRATA_CHILD_CHECK_OK(sut);
        strata::test::fill_pattern(sut->bytes(), 2);
        const auto synced = sut->sync();
        STRATA_CHILD_CHECK_OK(synced);
        ::raise(SIGKILL);
        return 3;
    });

    ASSERT_TRUE(child.signaled && child.signal == SIGKILL) << child.describe();
    EXPECT_EQ(pattern_mismatch(read_file(path_, 0, size), 2), "");
}

TEST_P(RegionDurability, the_synced_storage_part_of_a_combined_region_survives_sigkill) {
    const std::size_t page = page_size();
    const std::size_t size = 32 * page;
    const std::uint64_t offset = 2 * page;
    const CombinedOptions combined{.storage = {.path = path_, .offset = offset, .writeback = GetParam()},
                                   .factor = Factor::fixed(0.5)};

    const auto child = run_in_child([&] {
        auto sut = Region::combined(size, combined);
        STRATA_CHILD_CHECK_OK(sut);
        STRATA_CHILD_CHECK(sut->storage_bytes() == 16 * page);
        strata::test::fill_pattern(sut->bytes(), 3);
        const auto synced = sut->sync();
        STRATA_CHILD_CHECK_OK(synced);
        ::raise(SIGKILL);
        return 3;
    });

    ASSERT_TRUE(child.signaled && child.signal == SIGKILL) << child.describe();
    const auto file = read_file(path_, offset, 16 * page);
    EXPECT_EQ(pattern_mismatch(file, 3, 16 * page), "");
}

TEST(RegionDurabilityExplicitSync, stores_after_the_last_sync_do_not_reach_the_file_when_killed) {
    const strata::test::TempDir dir;
    const auto path = dir / "explicit.bin";
    const std::size_t page = page_size();
    const std::size_t size = 16 * page;

    const auto child = run_in_child([&] {
        auto sut = Region::storage(size, {.path = path, .writeback = Writeback::explicit_sync});
        STRATA_CHILD_CHECK_OK(sut);
        strata::test::fill_pattern(sut->bytes(), 1);
        const auto first = sut->sync();
        STRATA_CHILD_CHECK_OK(first);
        strata::test::fill_pattern(sut->bytes(), 2);
        const auto second = sut->sync(0, 4 * page);
        STRATA_CHILD_CHECK_OK(second);
        strata::test::fill_pattern(sut->bytes(), 3);
        ::raise(SIGKILL);
        return 3;
    });

    ASSERT_TRUE(child.signaled && child.signal == SIGKILL) << child.describe();
    const auto file = read_file(path, 0, size);
    ASSERT_EQ(file.size(), size);
    EXPECT_EQ(pattern_mismatch(std::span(file).subspan(0, 4 * page), 2), "");
    EXPECT_EQ(pattern_mismatch(std::span(file).subspan(4 * page), 1, 4 * page), "");
}

TEST(RegionDurabilityKernelWriteback, stores_after_the_last_sync_still_reach_the_file_when_killed) {
    const strata::test::TempDir dir;
    const auto path = dir / "kernel.bin";
    const std::size_t size = 16 * page_size();

    const auto child = run_in_child([&] {
        auto sut = Region::storage(size, {.path = path, .writeback = Writeback::kernel});
        STRATA_CHILD_CHECK_OK(sut);
        strata::test::fill_pattern(sut->bytes(), 1);
        const auto synced = sut->sync();
        STRATA_CHILD_CHECK_OK(synced);
        strata::test::fill_pattern(sut->bytes(), 2);
        ::raise(SIGKILL);
        return 3;
    });

    ASSERT_TRUE(child.signaled && child.signal == SIGKILL) << child.describe();
    EXPECT_EQ(pattern_mismatch(read_file(path, 0, size), 2), "");
}

}  // namespace
