// SPDX-License-Identifier: MIT
// Nothing is left behind on bad input: after every failing factory call this
// process has the same mappings and descriptors as before, and no file or
// shared segment was created. Each call is made twice and the second is
// measured, so one-time initialisation (a logger, a cached page size) is not
// mistaken for a leak while a leak per call still is.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "strata/region.hpp"
#include "support/process.hpp"
#include "support/resources.hpp"
#include "support/result.hpp"

namespace {

using strata::CombinedOptions;
using strata::Factor;
using strata::OpenMode;
using strata::Region;
using strata::Result;
using strata::StorageOptions;
using strata::test::page_size;

/// What a bad call may use: a fresh directory, an unused segment name and one in use.
struct Context {
    std::filesystem::path dir;
    std::string name;
    std::string existing_name;
};

struct BadCall {
    std::string_view label;
    std::function<Result<Region>(const Context&)> call;
};

std::vector<BadCall> bad_calls() {
    const std::size_t page = page_size();
    const std::size_t four_pages = 4 * page;
    return {
        {"memory_of_size_zero", [](const Context&) { return Region::memory(0); }},
        {"memory_beyond_the_address_space", [](const Context&) { return Region::memory(std::size_t{1} << 62U); }},
        {"memory_of_the_largest_size",
         [](const Context&) { return Region::memory(std::numeric_limits<std::size_t>::max()); }},
        {"shared_of_size_zero", [](const Context& c) { return Region::shared(0, {.name = c.name}); }},
        {"shared_with_an_empty_name", [page](const Context&) { return Region::shared(page, {.name = ""}); }},
        {"shared_with_a_slash_in_the_name",
         [page](const Context& c) { return Region::shared(page, {.name = c.name + "/x"}); }},
        {"shared_named_dot", [page](const Context&) { return Region::shared(page, {.name = "."}); }},
        {"shared_named_dot_dot", [page](const Context&) { return Region::shared(page, {.name = ".."}); }},
        {"shared_with_a_name_of_201_characters",
         [page](const Context& c) { return Region::shared(page, {.name = c.name + std::string(201, 'x')}); }},
        {"shared_open_only_of_a_missing_name",
         [page](const Context& c) { return Region::shared(page, {.name = c.name, .mode = OpenMode::open_only}); }},
        {"shared_create_only_of_an_existing_name",
         [page](const Context& c) { return Region::shared(page, {.name = c.existing_name}); }},
        {"storage_of_size_zero", [](const Context& c) { return Region::storage(0, {.path = c.dir / "zero.bin"}); }},
        {"storage_at_an_offset_off_the_page_grid",
         [page](const Context& c) { return Region::storage(page, {.path = c.dir / "offset.bin", .offset = 100}); }},
        {"storage_with_an_empty_path", [page](const Context&) { return Region::storage(page, StorageOptions{}); }},
        {"storage_in_a_missing_directory",
         [page](const Context& c) { return Region::storage(page, {.path = c.dir / "missing" / "x.bin"}); }},
        {"storage_on_a_directory", [page](const Context& c) { return Region::storage(page, {.path = c.dir}); }},
        {"storage_read_only_of_a_missing_file",
         [page](const Context& c) { return Region::storage(page, {.path = c.dir / "absent.bin", .read_only = true}); }},
        {"storage_read_only_beyond_the_end_of_the_file",
         [page](const Context& c) {
             return Region::storage(4 * page, {.path = c.dir / "short.bin", .read_only = true});
         }},
        {"combined_with_a_factor_above_one",
         [four_pages](const Context& c) {
             return Region::combined(
                 four_pages, CombinedOptions{.storage = {.path = c.dir / "c.bin"}, .factor = Factor::fixed(1.5)});
         }},
        {"combined_with_a_negative_factor",
         [four_pages](const Context& c) {
             return Region::combined(
                 four_pages, CombinedOptions{.storage = {.path = c.dir / "c.bin"}, .factor = Factor::fixed(-0.5)});
         }},
        {"combined_with_a_nan_factor",
         [four_pages](const Context& c) {
             return Region::combined(four_pages, CombinedOptions{.storage = {.path = c.dir / "c.bin"},
                                                                 .factor = Factor::fixed(std::nan(""))});
         }},
        {"combined_of_size_zero",
         [](const Context& c) { return Region::combined(0, CombinedOptions{.storage = {.path = c.dir / "c.bin"}}); }},
        {"combined_at_an_offset_off_the_page_grid",
         [four_pages](const Context& c) {
             return Region::combined(four_pages, CombinedOptions{.storage = {.path = c.dir / "c.bin", .offset = 1}});
         }},
        {"combined_in_a_missing_directory",
         [four_pages](const Context& c) {
             return Region::combined(four_pages, CombinedOptions{.storage = {.path = c.dir / "missing" / "c.bin"}});
         }},
    };
}

class RegionNoLeftovers : public ::testing::TestWithParam<BadCall> {
protected:
    void SetUp() override {
        strata::test::write_file(dir_ / "short.bin", 0, strata::test::make_pattern(page_size(), 1));
        auto existing = Region::shared(page_size(), {.name = context_.existing_name});
        ASSERT_TRUE(existing.has_value()) << existing.error().what();
        existing_.emplace(std::move(*existing));
    }

    /// Entries of the directory and the segments that carry this test's names.
    [[nodiscard]] std::vector<std::string> visible_objects() const {
        std::vector<std::string> objects = dir_.entries();
        std::error_code error;
        for (const auto& entry : std::filesystem::directory_iterator("/dev/shm", error)) {
            const std::string name = entry.path().filename().string();
            if (name.starts_with(context_.name) || name.starts_with(context_.existing_name)) {
                objects.push_back("/dev/shm/" + name);
            }
        }
        std::sort(objects.begin(), objects.end());
        return objects;
    }

    strata::test::TempDir dir_;
    Context context_{dir_.path(), strata::test::unique_name("new"), strata::test::unique_name("existing")};
    strata::test::ShmCleanup new_cleanup_{context_.name};
    strata::test::ShmCleanup existing_cleanup_{context_.existing_name};
    std::optional<Region> existing_;
};

TEST_P(RegionNoLeftovers, a_failing_call_leaves_mappings_descriptors_files_and_segments_as_they_were) {
    const auto objects_before = visible_objects();
    const auto first = GetParam().call(context_);
    ASSERT_FALSE(first.has_value()) << "the bad call succeeded";
    ASSERT_EQ(visible_objects(), objects_before);
    const auto before = strata::test::snapshot_resources();

    const auto sut = GetParam().call(context_);
    const auto after = strata::test::snapshot_resources();

    ASSERT_FALSE(sut.has_value()) << "the bad call succeeded";
    EXPECT_EQ(strata::test::resources_difference(before, after), "") << sut.error().what();
    EXPECT_EQ(before.mapping_count, after.mapping_count);
    EXPECT_EQ(before.descriptors, after.descriptors);
    EXPECT_EQ(visible_objects(), objects_before);
    EXPECT_EQ(strata::test::file_size(dir_ / "short.bin"), page_size());
}

INSTANTIATE_TEST_SUITE_P(BadCalls, RegionNoLeftovers, ::testing::ValuesIn(bad_calls()),
                         [](const ::testing::TestParamInfo<BadCall>& param_info) {
                             return std::string(param_info.param.label);
                         });

}  // namespace
