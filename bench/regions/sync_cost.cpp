// SPDX-License-Identifier: MIT
#include "sync_cost.hpp"

#include <array>
#include <cmath>

#include <fmt/format.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

namespace strata::bench {
namespace {

struct Case {
    double fraction;
    Layout layout;
};

// 100 % is the same in both layouts, so it is measured once.
constexpr std::array<Case, 6> cases{{{0.0, Layout::spread},
                                     {0.01, Layout::spread},
                                     {0.10, Layout::spread},
                                     {1.0, Layout::spread},
                                     {0.01, Layout::contiguous},
                                     {0.10, Layout::contiguous}}};

// Stores one new word into the pages of `c`; returns the number of pages dirtied.
std::size_t dirty_pages(std::byte* base, std::size_t pages, std::size_t page, Case c, std::uint64_t value) {
    if (c.fraction <= 0) {
        return 0;
    }
    std::size_t stride = 1;
    std::size_t end = pages;
    if (c.layout == Layout::spread) {
        stride = static_cast<std::size_t>(std::lround(1.0 / c.fraction));
    } else {
        end = static_cast<std::size_t>(std::lround(static_cast<double>(pages) * c.fraction));
    }
    std::size_t count = 0;
    for (std::size_t i = 0; i < end; i += stride, ++count) {
        *reinterpret_cast<std::uint64_t*>(base + i * page) = value;
    }
    return count;
}

Result<std::vector<SyncResult>> measure(Writeback writeback, const Options& options,
                                        const std::filesystem::path& path) {
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    const std::size_t pages = options.size / page;
    const auto label = to_string(writeback);
    auto region = Region::storage(options.size, {.path = path, .writeback = writeback});
    if (!region) {
        return make_error(region.error().code, "sync {}: {}", label, region.error().what());
    }

    // Every page written once and made durable: the file's blocks are allocated
    // and its pages cached and clean before the first timed sync().
    write_pages(region->data(), page, make_page_orders(pages).sequential, 1);
    if (auto s = region->sync(); !s) {
        return make_error(s.error().code, "sync {}: {}", label, s.error().what());
    }

    std::vector<std::vector<double>> seconds(cases.size());
    std::vector<std::vector<double>> smaps(cases.size());
    std::vector<std::size_t> dirtied(cases.size());
    std::uint64_t value = 2;
    // Cases interleaved within each repeat; each timed sync() is the prior
    // sync() of the next case, so exactly the new dirty pages are pending.
    for (int repeat = 0; repeat < options.repeats; ++repeat) {
        for (std::size_t c = 0; c < cases.size(); ++c) {
            dirtied[c] = dirty_pages(region->data(), pages, page, cases[c], value++);
            auto stats = region->stats();
            smaps[c].push_back(stats ? static_cast<double>(stats->dirty_bytes) : std::nan(""));
            Result<void> synced;
            seconds[c].push_back(time_seconds([&] { synced = region->sync(); }));
            if (!synced) {
                return make_error(synced.error().code, "sync {}: {}", label, synced.error().what());
            }
        }
    }
    std::vector<SyncResult> results;
    for (std::size_t c = 0; c < cases.size(); ++c) {
        SyncResult r;
        r.writeback = writeback;
        r.layout = cases[c].layout;
        r.fraction = cases[c].fraction;
        r.dirty_bytes = dirtied[c] * page;
        r.smaps_dirty_bytes = summarize(smaps[c]).median;
        r.seconds = summarize(std::move(seconds[c]));
        r.mbps = r.seconds.median > 0 ? static_cast<double>(r.dirty_bytes) / 1e6 / r.seconds.median : 0;
        fmt::print("  sync {:<13} {:<10} {:5.1f}% dirty ({:>10} B, smaps {:>10.0f} B): {:9.6f} s, {:7.1f} MB/s\n",
                   label, to_string(r.layout), r.fraction * 100, r.dirty_bytes, r.smaps_dirty_bytes, r.seconds.median,
                   r.mbps);
        results.push_back(std::move(r));
    }
    const CloseOptions close_options{.unlink = true, .discard = writeback == Writeback::explicit_sync};
    if (auto closed = region->close(close_options); !closed) {
        return make_error(closed.error().code, "sync {}: close: {}", label, closed.error().what());
    }
    return results;
}

double median_seconds(const SyncSection& section, Writeback w, Layout layout, double fraction) {
    // 0 % and 100 % are the same in both layouts and measured once, as spread.
    const Layout wanted = fraction <= 0.0 || fraction >= 1.0 ? Layout::spread : layout;
    for (const auto& r : section.results) {
        if (r.writeback == w && r.layout == wanted && r.fraction == fraction) {
            return r.seconds.median;
        }
    }
    return std::nan("");
}

}  // namespace

std::string_view to_string(Layout layout) noexcept {
    return layout == Layout::spread ? "spread" : "contiguous";
}

Result<SyncSection> run_sync_cost(const Options& options, const std::filesystem::path& work_dir, Cleanup& cleanup) {
    SyncSection section;
    section.region_bytes = options.size;
    for (const Writeback writeback : {Writeback::kernel, Writeback::explicit_sync}) {
        const auto path = cleanup.file(work_dir / fmt::format("sync-{}.bin", to_string(writeback)));
        auto results = measure(writeback, options, path);
        if (!results) {
            return std::unexpected(results.error());
        }
        section.results.insert(section.results.end(), results->begin(), results->end());
    }
    return section;
}

void to_json(nlohmann::json& j, const SyncSection& section) {
    j = {{"region_bytes", section.region_bytes}};
    auto& results = j["results"] = nlohmann::json::array();
    for (const auto& r : section.results) {
        results.push_back({{"writeback", to_string(r.writeback)},
                           {"layout", to_string(r.layout)},
                           {"fraction", r.fraction},
                           {"dirty_bytes", r.dirty_bytes},
                           {"smaps_dirty_bytes",
                            std::isnan(r.smaps_dirty_bytes) ? nlohmann::json() : nlohmann::json(r.smaps_dirty_bytes)},
                           {"seconds", r.seconds},
                           {"mbps", r.mbps}});
    }
    // Proportionality: with cost following the dirty data, the first two are near 10.
    for (const Writeback w : {Writeback::kernel, Writeback::explicit_sync}) {
        for (const Layout layout : {Layout::spread, Layout::contiguous}) {
            auto at = [&](double fraction) { return median_seconds(section, w, layout, fraction); };
            j["ratios"][std::string(to_string(w))][std::string(to_string(layout))] = {
                {"100_over_10", at(1.0) / at(0.10)},
                {"10_over_1", at(0.10) / at(0.01)},
                {"1_over_0", at(0.01) / at(0.0)}};
        }
    }
}

}  // namespace strata::bench
