// SPDX-License-Identifier: MIT
// Region::combined: one range split into a memory part and a storage part by
// a factor, in either order, and the memory budget behind Factor::automatic().
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "strata/region.hpp"
#include "support/resources.hpp"
#include "support/result.hpp"

namespace {

using strata::CombinedOptions;
using strata::Errc;
using strata::Factor;
using strata::Order;
using strata::Region;
using strata::RegionKind;
using strata::Tier;
using strata::Writeback;
using strata::test::fails_with;
using strata::test::page_size;
using strata::test::pattern_mismatch;
using strata::test::read_file;

/// The memory part the header promises: factor × size rounded down to whole
/// pages. When the memory part comes last and the size is not a page multiple,
/// the part still starts on a page boundary, so the region holds its pages
/// less the part of the last page beyond the end of the region.
std::size_t expected_memory_bytes(double factor, std::size_t size, Order order = Order::memory_first) {
    const std::size_t page = page_size();
    const double bytes = factor * static_cast<double>(size);
    const std::size_t memory = static_cast<std::size_t>(std::floor(bytes / static_cast<double>(page))) * page;
    const std::size_t tail = (page - size % page) % page;
    return order == Order::storage_first && memory > 0 ? memory - tail : memory;
}

using Layout = std::tuple<Order, double, Writeback>;

class RegionCombined : public ::testing::TestWithParam<Layout> {
protected:
    strata::test::TempDir dir_;
    std::filesystem::path path_ = dir_ / "combined.bin";

    [[nodiscard]] Order order() const { return std::get<0>(GetParam()); }
    [[nodiscard]] double factor() const { return std::get<1>(GetParam()); }
    [[nodiscard]] CombinedOptions options() const {
        return {.storage = {.path = path_, .writeback = std::get<2>(GetParam())},
                .factor = Factor::fixed(factor()),
                .order = order()};
    }
};

std::string layout_name(const ::testing::TestParamInfo<Layout>& info) {
    const auto [order, factor, writeback] = info.param;
    return fmt::format("{}_{}_{}", strata::to_string(order), static_cast<int>(factor * 100),
                       strata::to_string(writeback));
}

INSTANTIATE_TEST_SUITE_P(Layouts, RegionCombined,
                         ::testing::Combine(::testing::Values(Order::memory_first, Order::storage_first),
                                            ::testing::Values(0.0, 0.25, 0.5, 1.0),
                                            ::testing::Values(Writeback::kernel, Writeback::explicit_sync)),
                         layout_name);

TEST_P(RegionCombined, parts_are_sized_by_the_factor_and_placed_by_the_order) {
    const std::size_t size = 64 * page_size();
    const std::size_t memory = expected_memory_bytes(factor(), size);

    STRATA_ASSERT_ASSIGN(sut, Region::combined(size, options()));

    EXPECT_EQ(sut.kind(), RegionKind::combined);
    EXPECT_EQ(sut.size(), size);
    EXPECT_EQ(sut.memory_bytes(), memory);
    EXPECT_EQ(sut.storage_bytes(), size - memory);
    if (memory < size) {
        EXPECT_EQ(sut.path(), path_);
    }
    const std::size_t memory_begin = order() == Order::memory_first ? 0 : size - memory;
    std::vector<std::size_t> offsets{size - 1};
    for (std::size_t offset = 0; offset < size; offset += page_size() / 2) {
        offsets.push_back(offset);
    }
    for (const std::size_t offset : offsets) {
        const bool in_memory = offset >= memory_begin && offset < memory_begin + memory;
        const auto tier = sut.placement(sut.data() + offset);
        STRATA_ASSERT_OK(tier);
        ASSERT_EQ(*tier, in_memory ? Tier::memory : Tier::storage) << "offset " << offset;
    }
}

TEST_P(RegionCombined, synced_stores_of_the_storage_part_are_in_the_file_and_the_memory_part_is_not) {
    const std::size_t size = 64 * page_size();
    const std::size_t memory = expected_memory_bytes(factor(), size);
    const std::size_t storage = size - memory;
    const std::size_t storage_begin = order() == Order::memory_first ? memory : 0;
    STRATA_ASSERT_ASSIGN(sut, Region::combined(size, options()));
    strata::test::fill_pattern(sut.bytes(), 1);

    STRATA_ASSERT_OK(sut.sync());

    EXPECT_EQ(pattern_mismatch(sut.bytes(), 1), "");
    if (storage > 0) {
        const auto file = read_file(path_, 0, size);
        ASSERT_EQ(file.size(), storage) << "the file holds exactly the storage part";
        EXPECT_EQ(pattern_mismatch(file, 1, storage_begin), "");
    }
}

TEST_P(RegionCombined, stats_split_the_bytes_and_count_only_the_storage_part_as_dirty) {
    const std::size_t size = 64 * page_size();
    const std::size_t memory = expected_memory_bytes(factor(), size);
    STRATA_ASSERT_ASSIGN(sut, Region::combined(size, options()));
    strata::test::fill_pattern(sut.bytes(), 2);

    const auto before = sut.stats();
    STRATA_ASSERT_OK(sut.sync());
    const auto after = sut.stats();

    STRATA_ASSERT_OK(before);
    STRATA_ASSERT_OK(after);
    EXPECT_EQ(before->size, size);
    EXPECT_EQ(before->memory_bytes, memory);
    EXPECT_EQ(before->storage_bytes, size - memory);
    EXPECT_EQ(before->resident_bytes, size);
    EXPECT_EQ(before->dirty_bytes, size - memory);
    EXPECT_EQ(after->dirty_bytes, 0U);
}

TEST(RegionCombinedSplit, the_memory_part_is_rounded_down_to_whole_pages) {
    const strata::test::TempDir dir;
    const std::size_t page = page_size();
    const std::size_t size = 10 * page + 100;

    for (const double factor : {0.5, 0.55, 0.999}) {
        for (const Order order : {Order::memory_first, Order::storage_first}) {
            const auto path = dir / fmt::format("split-{}-{}.bin", factor, strata::to_string(order));
            STRATA_ASSERT_ASSIGN(
                sut,
                Region::combined(size, {.storage = {.path = path}, .factor = Factor::fixed(factor), .order = order}));

            const std::size_t memory = expected_memory_bytes(factor, size, order);
            EXPECT_EQ(sut.memory_bytes(), memory) << "factor " << factor;
            EXPECT_EQ(sut.storage_bytes(), size - memory) << "factor " << factor;
            // The part that comes first ends on a page boundary.
            EXPECT_EQ((order == Order::memory_first ? sut.memory_bytes() : sut.storage_bytes()) % page, 0U);
            const std::size_t memory_begin = order == Order::memory_first ? 0 : size - memory;
            const auto first_memory = sut.placement(sut.data() + memory_begin);
            STRATA_ASSERT_OK(first_memory);
            EXPECT_EQ(*first_memory, Tier::memory);
        }
    }
}

TEST(RegionCombinedSplit, a_storage_offset_maps_the_storage_part_from_that_offset) {
    const strata::test::TempDir dir;
    const std::size_t page = page_size();
    const auto path = dir / "offset.bin";
    strata::test::write_file(path, 0, strata::test::make_pattern(12 * page, 3));

    STRATA_ASSERT_ASSIGN(sut, Region::combined(8 * page, {.storage = {.path = path, .offset = 3 * page},
                                                          .factor = Factor::fixed(0.25),
                                                          .order = Order::storage_first}));

    ASSERT_EQ(sut.storage_bytes(), 6 * page);
    EXPECT_EQ(pattern_mismatch(sut.bytes().subspan(0, 6 * page), 3, 3 * page), "");
    EXPECT_EQ(strata::test::nonzero_byte(sut.bytes().subspan(6 * page)), "");
}

TEST(RegionCombinedSplit, close_with_unlink_removes_the_file) {
    const strata::test::TempDir dir;
    const auto path = dir / "unlink.bin";
    STRATA_ASSERT_ASSIGN(sut, Region::combined(8 * page_size(), {.storage = {.path = path}}));
    ASSERT_TRUE(std::filesystem::exists(path));

    STRATA_ASSERT_OK(sut.close({.unlink = true}));

    EXPECT_FALSE(sut.is_open());
    EXPECT_FALSE(std::filesystem::exists(path));
}

struct BadFactor {
    double value;
    std::string_view text;
};

class RegionCombinedBadFactor : public ::testing::TestWithParam<BadFactor> {};

TEST_P(RegionCombinedBadFactor, is_invalid_argument_naming_factor_and_creates_nothing) {
    const strata::test::TempDir dir;
    const auto path = dir / "bad.bin";

    const auto sut =
        Region::combined(4 * page_size(), {.storage = {.path = path}, .factor = Factor::fixed(GetParam().value)});

    EXPECT_TRUE(fails_with(sut, Errc::invalid_argument, {"factor", GetParam().text}));
    EXPECT_FALSE(std::filesystem::exists(path));
}

INSTANTIATE_TEST_SUITE_P(Values, RegionCombinedBadFactor,
                         ::testing::Values(BadFactor{-0.25, "-0.25"}, BadFactor{1.5, "1.5"},
                                           BadFactor{std::nan(""), "nan"},
                                           BadFactor{std::numeric_limits<double>::infinity(), "inf"},
                                           BadFactor{-std::numeric_limits<double>::infinity(), "-inf"}),
                         [](const ::testing::TestParamInfo<BadFactor>& param_info) {
                             return "case_" + std::to_string(param_info.index);
                         });

TEST(RegionCombinedSplit, zero_size_and_an_offset_off_the_page_grid_are_invalid_argument_naming_them) {
    const strata::test::TempDir dir;
    const auto path = dir / "bad.bin";
    const std::uint64_t offset = 512;

    EXPECT_TRUE(fails_with(Region::combined(0, {.storage = {.path = path}}), Errc::invalid_argument, {"size", "0"}));
    EXPECT_TRUE(fails_with(Region::combined(page_size(), {.storage = {.path = path, .offset = offset}}),
                           Errc::invalid_argument, {"offset", "512"}));
    EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(MemoryBudget, the_usable_memory_is_within_what_is_available_less_the_margin) {
    const auto sut = strata::current_memory_budget();

    STRATA_ASSERT_OK(sut);
    EXPECT_GT(sut->mem_available, 0U);
    if (sut->cgroup_limited) {
        EXPECT_LE(sut->usable + sut->margin, std::min(sut->mem_available, sut->cgroup_room));
    } else {
        EXPECT_EQ(sut->cgroup_room, 0U);
        EXPECT_LE(sut->usable + sut->margin, sut->mem_available);
    }
}

TEST(RegionCombinedAutomatic, a_region_that_fits_in_the_usable_memory_is_all_memory) {
    const strata::test::TempDir dir;
    const std::size_t size = 16 * page_size();
    const auto budget = strata::current_memory_budget();
    STRATA_ASSERT_OK(budget);
    ASSERT_GT(budget->usable, std::uint64_t{1} << 30U) << "this test expects a machine with memory to spare";

    STRATA_ASSERT_ASSIGN(
        sut, Region::combined(size, {.storage = {.path = dir / "auto.bin"}, .factor = Factor::automatic()}));

    EXPECT_EQ(sut.memory_bytes(), size);
    EXPECT_EQ(sut.storage_bytes(), 0U);
}

}  // namespace
