// SPDX-License-Identifier: MIT
// How much memory a process may use, for Factor::automatic(): MemAvailable,
// lowered by the memory cgroup (v1 or v2) the process is in.
#include <cstdint>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "region/memory_budget.hpp"

namespace strata {

namespace {

constexpr std::uint64_t mib = 1024 * 1024;
constexpr std::uint64_t min_margin = 64 * mib;

std::optional<std::uint64_t> read_number(const std::filesystem::path& file) {
    std::ifstream in(file);
    std::string text;
    if (!(in >> text) || text == "max") {
        return std::nullopt;
    }
    try {
        return std::stoull(text);
    } catch (...) {
        return std::nullopt;
    }
}

std::optional<std::uint64_t> stat_field(const std::filesystem::path& file, std::string_view key) {
    std::ifstream in(file);
    std::string name;
    std::uint64_t value = 0;
    while (in >> name >> value) {
        if (name == key) {
            return value;
        }
    }
    return std::nullopt;
}

}  // namespace

namespace detail {

std::optional<std::uint64_t> parse_mem_available(std::istream& meminfo) {
    std::string line;
    while (std::getline(meminfo, line)) {
        if (line.starts_with("MemAvailable:")) {
            std::istringstream fields(line.substr(13));
            std::uint64_t kib = 0;
            if (fields >> kib) {
                return kib * 1024;
            }
        }
    }
    return std::nullopt;
}

std::optional<CgroupRoom> cgroup_room(const std::filesystem::path& cgroup_root, std::istream& proc_self_cgroup) {
    std::string line;
    while (std::getline(proc_self_cgroup, line)) {
        // "4:memory:/path" (v1) or "0::/path" (v2)
        const auto first = line.find(':');
        const auto second = line.find(':', first + 1);
        if (first == std::string::npos || second == std::string::npos) {
            continue;
        }
        const std::string controllers = line.substr(first + 1, second - first - 1);
        const std::string path = line.substr(second + 1);
        const auto relative = std::filesystem::path(path).relative_path();
        if (controllers.find("memory") != std::string::npos) {
            const auto dir = cgroup_root / "memory" / relative;
            // hierarchical_memory_limit already is the lowest limit of the ancestors.
            auto limit = stat_field(dir / "memory.stat", "hierarchical_memory_limit");
            auto usage = read_number(dir / "memory.usage_in_bytes");
            if (!limit || !usage) {
                continue;
            }
            // Inactive file pages are reclaimable; they do not use up the room.
            const auto inactive = stat_field(dir / "memory.stat", "total_inactive_file").value_or(0);
            const std::uint64_t working = *usage > inactive ? *usage - inactive : 0;
            if (*limit >= (std::uint64_t{1} << 60)) {
                return std::nullopt;  // "unlimited" in v1 is a huge number
            }
            return CgroupRoom{*limit > working ? *limit - working : 0};
        }
        if (controllers.empty() && first == 1 && line[0] == '0') {
            const auto dir = cgroup_root / relative;
            auto limit = read_number(dir / "memory.max");
            auto usage = read_number(dir / "memory.current");
            if (!limit || !usage) {
                continue;
            }
            const auto inactive = stat_field(dir / "memory.stat", "inactive_file").value_or(0);
            const std::uint64_t working = *usage > inactive ? *usage - inactive : 0;
            return CgroupRoom{*limit > working ? *limit - working : 0};
        }
    }
    return std::nullopt;
}

MemoryBudget make_budget(std::uint64_t mem_available, std::optional<CgroupRoom> room) {
    MemoryBudget budget;
    budget.mem_available = mem_available;
    std::uint64_t usable = mem_available;
    if (room) {
        budget.cgroup_limited = true;
        budget.cgroup_room = room->bytes;
        usable = std::min(usable, room->bytes);
    }
    // Keep an eighth (at least 64 MiB) for the rest of the process: stacks,
    // heap, page cache of the storage part, other regions.
    budget.margin = std::max(min_margin, usable / 8);
    budget.usable = usable > budget.margin ? usable - budget.margin : 0;
    return budget;
}

}  // namespace detail

Result<MemoryBudget> current_memory_budget() {
    std::ifstream meminfo("/proc/meminfo");
    const auto available = detail::parse_mem_available(meminfo);
    if (!available) {
        return make_error(Errc::unsupported, "current_memory_budget: /proc/meminfo has no MemAvailable line");
    }
    std::ifstream cgroup("/proc/self/cgroup");
    return detail::make_budget(*available, detail::cgroup_room("/sys/fs/cgroup", cgroup));
}

}  // namespace strata
