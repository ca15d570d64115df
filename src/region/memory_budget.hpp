// SPDX-License-Identifier: MIT
// Parsing behind current_memory_budget(), separated so unit tests can feed it text.
#pragma once

#include <cstdint>
#include <filesystem>
#include <istream>
#include <optional>

#include "strata/region.hpp"

namespace strata::detail {

struct CgroupRoom {
    std::uint64_t bytes = 0;  ///< limit minus working set
};

/// MemAvailable in bytes from /proc/meminfo text.
std::optional<std::uint64_t> parse_mem_available(std::istream& meminfo);
/// The room left under the memory cgroup named in /proc/self/cgroup text,
/// with cgroup file systems under `cgroup_root`; nullopt if unlimited.
std::optional<CgroupRoom> cgroup_room(const std::filesystem::path& cgroup_root, std::istream& proc_self_cgroup);
/// Applies the safety margin.
MemoryBudget make_budget(std::uint64_t mem_available, std::optional<CgroupRoom> room);

}  // namespace strata::detail
