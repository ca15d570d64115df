// SPDX-License-Identifier: MIT
// Section 1: warm in-memory bandwidth of each region kind against malloc'd
// memory, all kinds alive at once and measured round-robin within every repeat
// so that noise on a shared machine hits them alike.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "cleanup.hpp"
#include "kernels.hpp"
#include "options.hpp"
#include "strata/error.hpp"

namespace strata::bench {

struct KindInfo {
    std::string kind;             ///< "malloc", "memory", "shared", "storage", "storage_explicit", "combined"
    std::string label;            ///< how it was made, for the report
    double first_touch_gbps = 0;  ///< the warm-up write pass, page faults included
    std::uint64_t first_touch_faults = 0;
};

struct BandwidthResult {
    std::string kind;
    Pattern pattern = Pattern::seq_read;
    Summary gbps;  ///< GB/s = 1e9 bytes per second
    /// Median over the repeats of this kind's GB/s over malloc's in the same
    /// repeat and pattern (runs seconds apart, so drift of the machine cancels).
    Summary ratio_to_malloc;
    double ratio_of_medians = 0;  ///< median GB/s / malloc's median GB/s
    Summary faults;               ///< page faults during one timed run
};

struct BandwidthSection {
    std::vector<KindInfo> kinds;
    std::vector<BandwidthResult> results;
};

/// Bytes of memory the section needs for its numbers to be warm.
std::size_t bandwidth_memory_needed(std::size_t size);

Result<BandwidthSection> run_bandwidth(const Options& options, const std::filesystem::path& work_dir, Cleanup& cleanup);

void to_json(nlohmann::json& j, const BandwidthSection& section);

}  // namespace strata::bench
