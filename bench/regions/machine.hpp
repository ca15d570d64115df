// SPDX-License-Identifier: MIT
// The machine line of a benchmark report and facts about the storage directory.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "strata/error.hpp"

namespace strata::bench {

/// The file system holding a directory.
struct FsInfo {
    std::string type;         ///< "ext4", "xfs", "tmpfs", ...
    std::string device;       ///< mount source, e.g. /dev/vda
    std::string mount_point;  ///< where it is mounted
    std::string rotational;   ///< "1", "0" or "" (unknown), from /sys/dev/block
    bool in_memory = false;   ///< tmpfs or ramfs: its "storage" is RAM
};

struct Machine {
    unsigned cores = 0;               ///< CPUs this process may run on (nproc)
    std::uint64_t mem_total = 0;      ///< MemTotal, bytes
    std::uint64_t mem_available = 0;  ///< MemAvailable at start, bytes
    std::string kernel;               ///< uname -r
    std::string cpu_model;            ///< /proc/cpuinfo "model name"
    std::string thp;                  ///< transparent hugepages mode ("madvise", ...)
    std::string date_utc;             ///< ISO 8601, when the run started
};

Machine read_machine();
Result<FsInfo> read_fs_info(const std::filesystem::path& dir);
/// MemAvailable now, bytes.
std::uint64_t mem_available();

void to_json(nlohmann::json& j, const FsInfo& fs);
void to_json(nlohmann::json& j, const Machine& m);

}  // namespace strata::bench
