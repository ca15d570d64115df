// SPDX-License-Identifier: MIT
// Section 3: the cost of Region::sync() on a storage region as a function of
// the dirty data. Before each timed sync() a previous sync() has cleaned the
// region; then a fraction of its pages is dirtied with one store per page, so
// only those pages are pending:
//
//   spread      pages spread evenly (every 100th page for 1 %): the layout the
//               report's proportionality ratios use;
//   contiguous  the first 1 % or 10 % of the pages: the same bytes as one
//               sequential run, which separates the device's penalty for
//               scattered 4 KiB writes from the amount written.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "cleanup.hpp"
#include "kernels.hpp"
#include "options.hpp"
#include "strata/error.hpp"
#include "strata/region.hpp"

namespace strata::bench {

enum class Layout { spread, contiguous };
std::string_view to_string(Layout layout) noexcept;

struct SyncResult {
    Writeback writeback = Writeback::kernel;
    Layout layout = Layout::spread;
    double fraction = 0;           ///< share of pages dirtied: 0, 0.01, 0.1, 1
    std::size_t dirty_bytes = 0;   ///< pages dirtied x page size
    double smaps_dirty_bytes = 0;  ///< median of Region::stats().dirty_bytes just before sync()
    Summary seconds;               ///< of sync()
    double mbps = 0;               ///< dirty_bytes / median seconds, MB = 1e6 bytes
};

struct SyncSection {
    std::size_t region_bytes = 0;
    std::vector<SyncResult> results;
};

Result<SyncSection> run_sync_cost(const Options& options, const std::filesystem::path& work_dir, Cleanup& cleanup);

void to_json(nlohmann::json& j, const SyncSection& section);

}  // namespace strata::bench
