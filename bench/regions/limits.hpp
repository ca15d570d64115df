// SPDX-License-Identifier: MIT
// Section 2: the physical limits the region numbers are read against —
// memcpy bandwidth of large warm buffers, and the disk under --dir with the
// page cache bypassed (O_DIRECT writes + fdatasync, O_DIRECT reads).
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "cleanup.hpp"
#include "kernels.hpp"
#include "options.hpp"
#include "strata/error.hpp"

namespace strata::bench {

struct Limits {
    std::size_t memcpy_bytes = 0;
    Summary memcpy_gbps;  ///< bytes copied (not read + written) per second
    std::size_t disk_bytes = 0;
    std::optional<Summary> disk_write_gbps;  ///< O_DIRECT overwrite of an allocated file + fdatasync
    std::optional<Summary> disk_read_gbps;   ///< O_DIRECT read of the same file
    std::string disk_note;                   ///< why the disk numbers are missing, if they are
};

Result<Limits> run_limits(const Options& options, const std::filesystem::path& work_dir, Cleanup& cleanup);

void to_json(nlohmann::json& j, const Limits& limits);

}  // namespace strata::bench
