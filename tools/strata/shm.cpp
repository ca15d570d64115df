// SPDX-License-Identifier: MIT
// `strata shm ls` and `strata shm gc`: the segments of a segment directory,
// how many of their users are alive, and removal of those whose users all died.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "strata/runtime/ocr.hpp"
#include "strata/shm/admin.hpp"
#include "strata/shm/segment.hpp"

namespace strata::cli {
namespace {

std::string human_bytes(std::uint64_t bytes) {
    constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double value = static_cast<double>(bytes);
    std::size_t unit = 0;
    while (value >= 1024.0 && unit + 1 < std::size(units)) {
        value /= 1024.0;
        ++unit;
    }
    return unit == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", value, units[unit]);
}

std::string human_age(double seconds) {
    if (seconds < 120) {
        return fmt::format("{:.0f}s", seconds);
    }
    if (seconds < 7200) {
        return fmt::format("{:.0f}m", seconds / 60);
    }
    return fmt::format("{:.1f}h", seconds / 3600);
}

}  // namespace

int run_shm_ls(const ShmOptions& options) {
    const std::filesystem::path dir = options.dir.empty() ? default_segment_dir() : std::filesystem::path(options.dir);
    auto listed = list_segments(dir);
    if (!listed) {
        fmt::print(stderr, "strata shm ls: {}\n", listed.error().what());
        return 1;
    }
    if (options.json) {
        nlohmann::json out = {{"dir", dir.string()}, {"segments", nlohmann::json::array()}};
        for (const auto& s : *listed) {
            out["segments"].push_back({{"name", s.name},
                                       {"path", s.path.string()},
                                       {"size", s.size},
                                       {"users_alive", s.users_alive},
                                       {"age_seconds", s.age_seconds},
                                       {"complete", s.complete},
                                       {"broken", s.broken_reason}});
        }
        fmt::print("{}\n", out.dump(2));
        return 0;
    }
    fmt::print("{:<40} {:>10} {:>11} {:>8}  {}\n", "SEGMENT", "SIZE", "USERS ALIVE", "AGE", "STATE");
    for (const auto& s : *listed) {
        const std::string state = !s.complete                ? "incomplete (creator died)"
                                  : !s.broken_reason.empty() ? "broken: " + s.broken_reason
                                  : s.users_alive == 0       ? "orphaned (strata shm gc removes it)"
                                                             : "in use";
        fmt::print("{:<40} {:>10} {:>11} {:>8}  {}\n", s.name, human_bytes(s.size), s.users_alive,
                   human_age(s.age_seconds), state);
    }
    if (listed->empty()) {
        fmt::print("(no strata segments in {})\n", dir.string());
    }
    return 0;
}

int run_shm_gc(const ShmOptions& options) {
    const std::filesystem::path dir = options.dir.empty() ? default_segment_dir() : std::filesystem::path(options.dir);
    auto removed = collect_segments(dir);
    if (!removed) {
        fmt::print(stderr, "strata shm gc: {}\n", removed.error().what());
        return 1;
    }
    const std::filesystem::path db_dir =
        options.ocr_db_dir.empty() ? ocr::default_db_dir() : std::filesystem::path(options.ocr_db_dir);
    auto db_dirs = ocr::collect_db_dirs(db_dir);
    if (!db_dirs) {
        fmt::print(stderr, "strata shm gc: {}\n", db_dirs.error().what());
        return 1;
    }
    if (options.json) {
        std::vector<std::string> paths;
        for (const auto& p : *db_dirs) {
            paths.push_back(p.string());
        }
        fmt::print("{}\n", nlohmann::json({{"dir", dir.string()},
                                           {"removed", *removed},
                                           {"ocr_db_dir", db_dir.string()},
                                           {"ocr_db_dirs_removed", paths}})
                               .dump(2));
        return 0;
    }
    for (const auto& name : *removed) {
        fmt::print("removed {} (no user alive)\n", name);
    }
    for (const auto& p : *db_dirs) {
        fmt::print("removed {} (storage data blocks of an OCR run that died)\n", p.string());
    }
    fmt::print("strata shm gc: {} segment(s) removed from {}, {} OCR data-block director{} from {}\n", removed->size(),
               dir.string(), db_dirs->size(), db_dirs->size() == 1 ? "y" : "ies", db_dir.string());
    return 0;
}

}  // namespace strata::cli
