// SPDX-License-Identifier: MIT
#include "bandwidth.hpp"

#include <cstdlib>
#include <memory>
#include <optional>
#include <random>

#include <fmt/format.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include "strata/region.hpp"

namespace strata::bench {
namespace {

struct FreeDeleter {
    void operator()(std::byte* p) const noexcept { std::free(p); }
};

// One kind under test: either malloc'd memory or a Region.
struct Subject {
    KindInfo info;
    std::unique_ptr<std::byte, FreeDeleter> buffer;
    std::optional<Region> region;
    CloseOptions close_options;

    [[nodiscard]] std::byte* data() const { return region ? region->data() : buffer.get(); }
};

Result<Subject> from_region(Result<Region> region, std::string kind, std::string label, CloseOptions close_options) {
    if (!region) {
        return make_error(region.error().code, "{}: {}", kind, region.error().what());
    }
    Subject s;
    s.info.kind = std::move(kind);
    s.info.label = std::move(label);
    s.region = std::move(*region);
    s.close_options = close_options;
    return s;
}

Result<std::vector<Subject>> make_subjects(const Options& options, const std::filesystem::path& dir, Cleanup& cleanup) {
    const std::size_t size = options.size;
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    std::vector<Subject> subjects;

    Subject baseline;
    baseline.info = {"malloc", "std::aligned_alloc(page size, size): the baseline", 0, 0};
    baseline.buffer.reset(static_cast<std::byte*>(std::aligned_alloc(page, size)));
    if (!baseline.buffer) {
        return make_error(Errc::out_of_memory, "malloc: cannot allocate {}", format_size(size));
    }
    subjects.push_back(std::move(baseline));

    auto memory = from_region(Region::memory(size), "memory", "Region::memory", {});
    if (!memory) {
        return std::unexpected(memory.error());
    }
    subjects.push_back(std::move(*memory));

    std::random_device entropy;
    const std::string name = cleanup.segment(fmt::format("strata-bench-regions-{}-{:08x}", ::getpid(), entropy()));
    auto shared = from_region(Region::shared(size, {.name = name, .mode = OpenMode::create_only}), "shared",
                              fmt::format("Region::shared (/dev/shm/{})", name), {.unlink = true});
    if (!shared) {
        return std::unexpected(shared.error());
    }
    subjects.push_back(std::move(*shared));

    const auto storage_path = cleanup.file(dir / "bw-storage.bin");
    auto storage = from_region(Region::storage(size, {.path = storage_path}), "storage",
                               "Region::storage, Writeback::kernel (MAP_SHARED file)", {.unlink = true});
    if (!storage) {
        return std::unexpected(storage.error());
    }
    subjects.push_back(std::move(*storage));

    const auto explicit_path = cleanup.file(dir / "bw-storage-explicit.bin");
    auto explicit_sync = from_region(
        Region::storage(size, {.path = explicit_path, .writeback = Writeback::explicit_sync}), "storage_explicit",
        "Region::storage, Writeback::explicit_sync (MAP_PRIVATE file)", {.unlink = true, .discard = true});
    if (!explicit_sync) {
        return std::unexpected(explicit_sync.error());
    }
    subjects.push_back(std::move(*explicit_sync));

    const auto combined_path = cleanup.file(dir / "bw-combined.bin");
    auto combined =
        from_region(Region::combined(size, {.storage = {.path = combined_path}, .factor = Factor::fixed(0.5)}),
                    "combined", "Region::combined, factor 0.5, memory first, kernel write-back", {.unlink = true});
    if (!combined) {
        return std::unexpected(combined.error());
    }
    subjects.push_back(std::move(*combined));
    return subjects;
}

double median_of(const std::vector<double>& v) {
    return summarize(v).median;
}

}  // namespace

std::size_t bandwidth_memory_needed(std::size_t size) {
    // malloc, memory, shared, storage page cache, explicit_sync page cache plus
    // its private copies, combined: seven times the size.
    return 7 * size;
}

Result<BandwidthSection> run_bandwidth(const Options& options, const std::filesystem::path& work_dir,
                                       Cleanup& cleanup) {
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    const std::size_t size = options.size;
    const auto gb = static_cast<double>(size) / 1e9;
    auto subjects = make_subjects(options, work_dir, cleanup);
    if (!subjects) {
        return std::unexpected(subjects.error());
    }
    const PageOrders orders = make_page_orders(size / page);

    // Warm-up: the first store to each page faults it in (and allocates page
    // cache for files); one read pass after it. Every timed run is warm.
    for (auto& s : *subjects) {
        const std::uint64_t faults = page_faults();
        const double seconds = run_pattern(Pattern::seq_write, s.data(), page, orders, 1);
        s.info.first_touch_faults = page_faults() - faults;
        s.info.first_touch_gbps = gb / seconds;
        run_pattern(Pattern::seq_read, s.data(), page, orders, 0);
        fmt::print("  warm-up {:<17} first touch {:6.2f} GB/s ({} faults)\n", s.info.kind, s.info.first_touch_gbps,
                   s.info.first_touch_faults);
    }

    const std::size_t kinds = subjects->size();
    // samples[pattern][kind] -> GB/s per repeat; faults likewise.
    std::vector<std::vector<std::vector<double>>> gbps(all_patterns.size(), std::vector<std::vector<double>>(kinds));
    auto faults = gbps;
    // Round-robin over the kinds inside each repeat and pattern, starting at a
    // different kind each time: drift on a noisy machine then hits every kind
    // alike and the ratios to malloc stay fair.
    for (int repeat = 0; repeat < options.repeats; ++repeat) {
        // A new value each repeat, so every write run really changes the pages.
        const std::uint64_t value = std::uint64_t{0x0101010101010101} * (static_cast<std::uint64_t>(repeat) + 2);
        for (std::size_t p = 0; p < all_patterns.size(); ++p) {
            for (std::size_t i = 0; i < kinds; ++i) {
                const std::size_t k = (i + static_cast<std::size_t>(repeat) + p) % kinds;
                const std::uint64_t before = page_faults();
                const double seconds = run_pattern(all_patterns[p], (*subjects)[k].data(), page, orders, value);
                faults[p][k].push_back(static_cast<double>(page_faults() - before));
                gbps[p][k].push_back(gb / seconds);
            }
        }
        fmt::print("  repeat {}/{} done\n", repeat + 1, options.repeats);
    }

    BandwidthSection section;
    for (std::size_t p = 0; p < all_patterns.size(); ++p) {
        const std::vector<double>& baseline = gbps[p][0];
        for (std::size_t k = 0; k < kinds; ++k) {
            BandwidthResult r;
            r.kind = (*subjects)[k].info.kind;
            r.pattern = all_patterns[p];
            std::vector<double> paired;
            for (std::size_t i = 0; i < baseline.size(); ++i) {
                paired.push_back(gbps[p][k][i] / baseline[i]);
            }
            r.ratio_to_malloc = summarize(std::move(paired));
            r.gbps = summarize(gbps[p][k]);
            r.ratio_of_medians = r.gbps.median / median_of(baseline);
            r.faults = summarize(std::move(faults[p][k]));
            section.results.push_back(std::move(r));
        }
    }
    for (auto& s : *subjects) {
        section.kinds.push_back(s.info);
        if (s.region) {
            if (auto closed = s.region->close(s.close_options); !closed) {
                return make_error(closed.error().code, "{}: close: {}", s.info.kind, closed.error().what());
            }
        }
    }
    return section;
}

void to_json(nlohmann::json& j, const BandwidthSection& section) {
    j = nlohmann::json::object();
    auto& kinds = j["kinds"] = nlohmann::json::array();
    for (const auto& k : section.kinds) {
        kinds.push_back({{"kind", k.kind},
                         {"label", k.label},
                         {"first_touch_gbps", k.first_touch_gbps},
                         {"first_touch_faults", k.first_touch_faults}});
    }
    auto& results = j["results"] = nlohmann::json::array();
    for (const auto& r : section.results) {
        results.push_back({{"kind", r.kind},
                           {"pattern", to_string(r.pattern)},
                           {"gbps", r.gbps},
                           {"ratio_to_malloc", r.ratio_to_malloc},
                           {"ratio_of_medians", r.ratio_of_medians},
                           {"faults", r.faults}});
    }
}

}  // namespace strata::bench
