// SPDX-License-Identifier: MIT
// Region::memory: anonymous private memory, and what every region shares:
// placement, stats, advice, sync ranges, close and moves.
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "strata/region.hpp"
#include "support/process.hpp"
#include "support/resources.hpp"
#include "support/result.hpp"

namespace {

using strata::Advice;
using strata::Errc;
using strata::Region;
using strata::RegionKind;
using strata::Tier;
using strata::test::address_of;
using strata::test::fails_with;
using strata::test::page_size;

constexpr std::array all_advice{Advice::normal, Advice::sequential, Advice::random, Advice::read_mostly,
                                Advice::write_mostly};

TEST(RegionMemory, created_region_has_the_requested_size_and_is_zero_filled) {
    const std::size_t size = 3 * page_size() + 100;

    STRATA_ASSERT_ASSIGN(sut, Region::memory(size));

    EXPECT_TRUE(sut.is_open());
    EXPECT_EQ(sut.kind(), RegionKind::memory);
    EXPECT_EQ(sut.size(), size);
    EXPECT_EQ(sut.bytes().data(), sut.data());
    EXPECT_EQ(sut.bytes().size(), size);
    EXPECT_EQ(address_of(sut.data()) % page_size(), 0U);
    EXPECT_EQ(sut.memory_bytes(), size);
    EXPECT_EQ(sut.storage_bytes(), 0U);
    EXPECT_TRUE(sut.path().empty());
    EXPECT_TRUE(sut.name().empty());
    EXPECT_EQ(strata::test::nonzero_byte(sut.bytes()), "");
}

TEST(RegionMemory, stored_bytes_are_read_back) {
    STRATA_ASSERT_ASSIGN(sut, Region::memory(5 * page_size() + 7));

    strata::test::fill_pattern(sut.bytes(), 1);

    EXPECT_EQ(strata::test::pattern_mismatch(sut.bytes(), 1), "");
}

TEST(RegionMemory, zero_size_is_invalid_argument_naming_size) {
    EXPECT_TRUE(fails_with(Region::memory(0), Errc::invalid_argument, {"size", "0"}));
}

TEST(RegionMemory, size_that_cannot_be_mapped_is_out_of_memory_naming_size) {
    // 200 TiB: within what a 64-bit size may ask, beyond the 128 TiB a process gets by default.
    const std::size_t size = std::size_t{200} << 40U;

    EXPECT_TRUE(fails_with(Region::memory(size), Errc::out_of_memory, {"size", std::to_string(size)}));
}

TEST(RegionMemory, sizes_beyond_any_address_space_are_refused_naming_size) {
    for (const std::size_t size : {std::size_t{1} << 62U, std::numeric_limits<std::size_t>::max()}) {
        const auto result = Region::memory(size);

        ASSERT_FALSE(result.has_value()) << "size " << size;
        EXPECT_TRUE(result.error().code == Errc::invalid_argument || result.error().code == Errc::out_of_memory)
            << result.error().what();
        EXPECT_NE(result.error().message.find("size"), std::string::npos) << result.error().what();
        EXPECT_NE(result.error().message.find(std::to_string(size)), std::string::npos) << result.error().what();
    }
}

TEST(RegionMemory, every_byte_is_placed_in_memory) {
    const std::size_t size = 4 * page_size();
    STRATA_ASSERT_ASSIGN(sut, Region::memory(size));

    for (const std::size_t offset : {std::size_t{0}, page_size() + 1, size - 1}) {
        const auto tier = sut.placement(sut.data() + offset);
        STRATA_ASSERT_OK(tier);
        EXPECT_EQ(*tier, Tier::memory) << "offset " << offset;
    }
}

TEST(RegionMemory, placement_of_an_address_outside_the_region_is_invalid_argument_naming_address) {
    const std::size_t size = 4 * page_size();
    STRATA_ASSERT_ASSIGN(sut, Region::memory(size));
    const std::uintptr_t begin = address_of(sut.data());

    for (const std::uintptr_t outside : {begin - 1, begin + size, begin + size + page_size()}) {
        const auto tier = sut.placement(reinterpret_cast<const void*>(outside));
        EXPECT_TRUE(fails_with(tier, Errc::invalid_argument, {"address", fmt::format("{:x}", outside)}));
    }
    EXPECT_TRUE(fails_with(sut.placement(nullptr), Errc::invalid_argument, {"address"}));
}

TEST(RegionMemory, stats_count_touched_pages_as_resident_and_nothing_as_dirty_storage) {
    const std::size_t page = page_size();
    const std::size_t size = 64 * page;
    STRATA_ASSERT_ASSIGN(sut, Region::memory(size));
    for (std::size_t i = 0; i < 16; ++i) {
        sut.data()[(4 * i) * page] = std::byte{1};
    }

    const auto stats = sut.stats();

    STRATA_ASSERT_OK(stats);
    EXPECT_EQ(stats->size, size);
    EXPECT_EQ(stats->memory_bytes, size);
    EXPECT_EQ(stats->storage_bytes, 0U);
    EXPECT_EQ(stats->resident_bytes, 16 * page);
    EXPECT_EQ(stats->dirty_bytes, 0U);
}

TEST(RegionMemory, every_advice_is_accepted_and_keeps_the_data) {
    const std::size_t page = page_size();
    const std::size_t size = 16 * page;
    STRATA_ASSERT_ASSIGN(sut, Region::memory(size));
    strata::test::fill_pattern(sut.bytes(), 2);

    for (const Advice advice : all_advice) {
        STRATA_EXPECT_OK(sut.advise(advice)) << " advice " << strata::to_string(advice);
        STRATA_EXPECT_OK(sut.advise(advice, 3 * page, 5 * page)) << " advice " << strata::to_string(advice);
        STRATA_EXPECT_OK(sut.advise(advice, 100, 10)) << " advice " << strata::to_string(advice);
    }

    EXPECT_EQ(strata::test::pattern_mismatch(sut.bytes(), 2), "");
}

TEST(RegionMemory, advice_beyond_the_end_is_invalid_argument_naming_the_range) {
    const std::size_t size = 4 * page_size();
    STRATA_ASSERT_ASSIGN(sut, Region::memory(size));
    const std::size_t past = size + page_size();

    EXPECT_TRUE(
        fails_with(sut.advise(Advice::random, past, 1), Errc::invalid_argument, {"offset", std::to_string(past)}));
    EXPECT_TRUE(fails_with(sut.advise(Advice::random, 0, size + 1), Errc::invalid_argument,
                           {"length", std::to_string(size + 1)}));
    EXPECT_TRUE(fails_with(sut.advise(Advice::random, 1, std::numeric_limits<std::size_t>::max()),
                           Errc::invalid_argument, {"length"}));
}

TEST(RegionMemory, sync_of_memory_succeeds_and_keeps_the_data) {
    const std::size_t size = 8 * page_size();
    STRATA_ASSERT_ASSIGN(sut, Region::memory(size));
    strata::test::fill_pattern(sut.bytes(), 3);

    STRATA_EXPECT_OK(sut.sync());
    STRATA_EXPECT_OK(sut.sync(page_size() + 10, 100));
    STRATA_EXPECT_OK(sut.sync_async());
    STRATA_EXPECT_OK(sut.sync_async(0, size));

    EXPECT_EQ(strata::test::pattern_mismatch(sut.bytes(), 3), "");
}

TEST(RegionMemory, sync_beyond_the_end_is_invalid_argument_naming_the_range) {
    const std::size_t size = 4 * page_size();
    STRATA_ASSERT_ASSIGN(sut, Region::memory(size));
    const std::size_t past = size + 1;

    EXPECT_TRUE(fails_with(sut.sync(past, 0), Errc::invalid_argument, {"offset", std::to_string(past)}));
    EXPECT_TRUE(fails_with(sut.sync(0, size + 1), Errc::invalid_argument, {"length", std::to_string(size + 1)}));
    EXPECT_TRUE(fails_with(sut.sync(1, std::numeric_limits<std::size_t>::max()), Errc::invalid_argument, {"length"}));
    EXPECT_TRUE(fails_with(sut.sync_async(past, 0), Errc::invalid_argument, {"offset", std::to_string(past)}));
    EXPECT_TRUE(fails_with(sut.sync_async(0, size + 1), Errc::invalid_argument, {"length", std::to_string(size + 1)}));
}

TEST(RegionMemory, close_unmaps_the_range_and_leaves_the_region_closed) {
    STRATA_ASSERT_ASSIGN(sut, Region::memory(4 * page_size()));
    const std::uintptr_t address = address_of(sut.data());
    ASSERT_TRUE(strata::test::is_mapped(address));

    STRATA_ASSERT_OK(sut.close());

    EXPECT_FALSE(sut.is_open());
    EXPECT_EQ(sut.data(), nullptr);
    EXPECT_FALSE(strata::test::is_mapped(address));
}

TEST(RegionMemory, destruction_unmaps_the_range) {
    std::uintptr_t address = 0;
    {
        STRATA_ASSERT_ASSIGN(sut, Region::memory(4 * page_size()));
        address = address_of(sut.data());
        ASSERT_TRUE(strata::test::is_mapped(address));
    }

    EXPECT_FALSE(strata::test::is_mapped(address));
}

TEST(RegionMemory, move_construction_transfers_the_mapping_and_closes_the_source) {
    const std::size_t size = 4 * page_size() + 1;
    STRATA_ASSERT_ASSIGN(sut, Region::memory(size));
    strata::test::fill_pattern(sut.bytes(), 4);
    std::byte* const address = sut.data();

    Region moved(std::move(sut));

    EXPECT_FALSE(sut.is_open());     // NOLINT(bugprone-use-after-move): the moved-from state is under test
    EXPECT_EQ(sut.data(), nullptr);  // NOLINT(bugprone-use-after-move)
    EXPECT_TRUE(moved.is_open());
    EXPECT_EQ(moved.data(), address);
    EXPECT_EQ(moved.size(), size);
    EXPECT_EQ(moved.kind(), RegionKind::memory);
    EXPECT_EQ(strata::test::pattern_mismatch(moved.bytes(), 4), "");
}

TEST(RegionMemory, move_assignment_releases_the_previous_mapping_and_takes_the_new_one) {
    STRATA_ASSERT_ASSIGN(sut, Region::memory(4 * page_size()));
    STRATA_ASSERT_ASSIGN(source, Region::memory(2 * page_size()));
    strata::test::fill_pattern(source.bytes(), 5);
    const std::uintptr_t previous = address_of(sut.data());
    std::byte* const taken = source.data();

    sut = std::move(source);

    EXPECT_FALSE(strata::test::is_mapped(previous));
    EXPECT_FALSE(source.is_open());  // NOLINT(bugprone-use-after-move): the moved-from state is under test
    EXPECT_EQ(sut.data(), taken);
    EXPECT_EQ(sut.size(), 2 * page_size());
    EXPECT_EQ(strata::test::pattern_mismatch(sut.bytes(), 5), "");
}

TEST(RegionMemory, a_moved_from_region_can_be_destroyed_and_reassigned) {
    STRATA_ASSERT_ASSIGN(sut, Region::memory(page_size()));
    Region other(std::move(sut));
    STRATA_ASSERT_ASSIGN(fresh, Region::memory(3 * page_size()));

    sut = std::move(fresh);  // NOLINT(bugprone-use-after-move): assigning to a moved-from region is allowed

    EXPECT_TRUE(sut.is_open());
    EXPECT_EQ(sut.size(), 3 * page_size());
    EXPECT_TRUE(other.is_open());
    EXPECT_EQ(other.size(), page_size());
}

}  // namespace
