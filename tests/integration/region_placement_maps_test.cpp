// SPDX-License-Identifier: MIT
// Combined regions checked against the kernel's own view, /proc/self/maps:
// every page of the memory part is anonymous private memory, every page of
// the storage part maps the given file at the right file offset.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <tuple>

#include <sys/stat.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "strata/region.hpp"
#include "support/process.hpp"
#include "support/resources.hpp"
#include "support/result.hpp"

namespace {

using strata::Factor;
using strata::Order;
using strata::Region;
using strata::Writeback;
using strata::test::address_of;
using strata::test::page_size;

// order, factor, storage offset in pages, write-back
using Layout = std::tuple<Order, double, std::size_t, Writeback>;

class RegionPlacementMaps : public ::testing::TestWithParam<Layout> {
protected:
    strata::test::TempDir dir_;
    std::filesystem::path path_ = dir_ / "placed.bin";
};

std::string layout_name(const ::testing::TestParamInfo<Layout>& param_info) {
    const auto [order, factor, offset_pages, writeback] = param_info.param;
    return fmt::format("{}_{}_offset{}_{}", strata::to_string(order), static_cast<int>(factor * 100), offset_pages,
                       strata::to_string(writeback));
}

INSTANTIATE_TEST_SUITE_P(Layouts, RegionPlacementMaps,
                         ::testing::Combine(::testing::Values(Order::memory_first, Order::storage_first),
                                            ::testing::Values(0.0, 0.25, 0.5, 1.0),
                                            ::testing::Values(std::size_t{0}, std::size_t{3}),
                                            ::testing::Values(Writeback::kernel, Writeback::explicit_sync)),
                         layout_name);

TEST_P(RegionPlacementMaps, memory_part_is_anonymous_and_storage_part_maps_the_file_at_its_offset) {
    const auto [order, factor, offset_pages, writeback] = GetParam();
    const std::size_t page = page_size();
    const std::size_t pages = 64;
    const std::size_t size = pages * page;
    const std::uint64_t file_offset = offset_pages * page;
    const std::size_t memory = static_cast<std::size_t>(factor * static_cast<double>(pages)) * page;
    const std::size_t storage = size - memory;

    STRATA_ASSERT_ASSIGN(
        sut, Region::combined(size, {.storage = {.path = path_, .offset = file_offset, .writeback = writeback},
                                     .factor = Factor::fixed(factor),
                                     .order = order}));
    strata::test::fill_pattern(sut.bytes(), 1);
    const auto maps = strata::test::read_maps();

    ASSERT_EQ(sut.memory_bytes(), memory);
    ASSERT_EQ(sut.storage_bytes(), storage);
    const std::uintptr_t begin = address_of(sut.data());
    const std::uintptr_t memory_begin = order == Order::memory_first ? begin : begin + storage;
    const std::uintptr_t storage_begin = order == Order::memory_first ? begin + memory : begin;
    const struct stat file = strata::test::stat_of(path_);
    std::size_t anonymous_pages = 0;
    std::size_t file_pages = 0;
    for (std::size_t i = 0; i < pages; ++i) {
        const std::uintptr_t address = begin + i * page;
        const auto mapping = strata::test::mapping_at(maps, address);
        ASSERT_TRUE(mapping.has_value()) << "page " << i << " is not mapped";
        const bool in_memory = address >= memory_begin && address < memory_begin + memory;
        if (in_memory) {
            EXPECT_TRUE(mapping->is_anonymous()) << "page " << i << ": " << mapping->line;
            EXPECT_EQ(mapping->perms, "rw-p") << "page " << i << ": " << mapping->line;
            anonymous_pages += mapping->is_anonymous() ? 1U : 0U;
            continue;
        }
        const std::uint64_t expected_offset = file_offset + (address - storage_begin);
        const std::uint64_t actual_offset = mapping->offset + (address - mapping->start);
        EXPECT_EQ(mapping->path, path_.string()) << "page " << i << ": " << mapping->line;
        EXPECT_EQ(mapping->inode, static_cast<std::uint64_t>(file.st_ino)) << "page " << i << ": " << mapping->line;
        EXPECT_EQ(actual_offset, expected_offset) << "page " << i << ": " << mapping->line;
        EXPECT_EQ(mapping->perms, writeback == Writeback::kernel ? "rw-s" : "rw-p")
            << "page " << i << ": " << mapping->line;
        file_pages += mapping->path == path_.string() && actual_offset == expected_offset ? 1U : 0U;
    }
    EXPECT_EQ(anonymous_pages * page, memory);
    EXPECT_EQ(file_pages * page, storage);
}

}  // namespace
