// SPDX-License-Identifier: MIT
// Factor::automatic() under a cgroup v1 memory limit: a child moves itself into
// a fresh group limited to 256 MiB and creates a 1 GiB combined region. The
// memory part must fit the limit, the storage part takes the rest, and
// touching every page must not get the child OOM-killed.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "strata/region.hpp"
#include "support/capability.hpp"
#include "support/process.hpp"
#include "support/resources.hpp"
#include "support/result.hpp"
#include "support/system.hpp"

namespace {

using strata::Factor;
using strata::Region;
using strata::Tier;
using strata::test::page_size;

constexpr std::uint64_t cgroup_limit = std::uint64_t{256} << 20U;
// Twice the limit: enough to prove the storage part carries what memory cannot,
// and half the write-back of 1 GiB on a shared disk.
constexpr std::size_t region_size = std::size_t{512} << 20U;

TEST(RegionCgroup, an_automatic_region_in_a_256_mib_memory_cgroup_fits_the_limit_and_survives_touching_every_page) {
    STRATA_REQUIRE(strata::test::has_cgroup_v1_memory(),
                   "root and the cgroup v1 memory controller at /sys/fs/cgroup/memory");
    const strata::test::TempDir dir;
    const auto path = dir / "auto.bin";
    const strata::test::MemoryCgroup cgroup(strata::test::unique_name(), cgroup_limit);
    ASSERT_TRUE(cgroup.ok()) << cgroup.error();

    const auto child = strata::test::run_in_child([&] {
        STRATA_CHILD_CHECK(cgroup.enter() == 0);
        STRATA_CHILD_CHECK(strata::test::own_memory_cgroup() == cgroup.path());
        const auto budget = strata::current_memory_budget();
        STRATA_CHILD_CHECK_OK(budget);
        STRATA_CHILD_CHECK(budget->cgroup_limited);
        STRATA_CHILD_CHECK(budget->cgroup_room <= cgroup_limit);
        STRATA_CHILD_CHECK(budget->usable <= budget->cgroup_room);

        auto sut = Region::combined(region_size, {.storage = {.path = path}, .factor = Factor::automatic()});
        STRATA_CHILD_CHECK_OK(sut);
        std::fprintf(stderr, "automatic split: %zu bytes in memory, %zu on storage (usable %llu)\n",
                     sut->memory_bytes(), sut->storage_bytes(), static_cast<unsigned long long>(budget->usable));
        STRATA_CHILD_CHECK(sut->size() == region_size);
        STRATA_CHILD_CHECK(sut->memory_bytes() > 0);
        STRATA_CHILD_CHECK(sut->memory_bytes() <= cgroup_limit);
        STRATA_CHILD_CHECK(sut->memory_bytes() % page_size() == 0);
        STRATA_CHILD_CHECK(sut->storage_bytes() == region_size - sut->memory_bytes());
        const auto first = sut->placement(sut->data());
        const auto last = sut->placement(sut->data() + region_size - 1);
        STRATA_CHILD_CHECK_OK(first);
        STRATA_CHILD_CHECK_OK(last);
        STRATA_CHILD_CHECK(*first == Tier::memory);
        STRATA_CHILD_CHECK(*last == Tier::storage);

        const std::size_t pages = region_size / page_size();
        for (std::size_t i = 0; i < pages; ++i) {
            std::memcpy(sut->data() + i * page_size(), &i, sizeof i);
        }
        const auto synced = sut->sync();
        STRATA_CHILD_CHECK_OK(synced);
        for (std::size_t i = 0; i < pages; ++i) {
            std::size_t stored = 0;
            std::memcpy(&stored, sut->data() + i * page_size(), sizeof stored);
            STRATA_CHILD_CHECK(stored == i);
        }
        return 0;
    });

    EXPECT_TRUE(child.succeeded()) << child.describe() << "; peak usage of the group "
                                   << cgroup.read_number("memory.max_usage_in_bytes") << " bytes; "
                                   << strata::test::read_text(cgroup.path() / "memory.oom_control");
}

}  // namespace
