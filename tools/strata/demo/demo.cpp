// SPDX-License-Identifier: MIT
// `strata demo`: runs every capability that exists on small data and prints
// what happened. Each layer adds its own section (sections.hpp); a failed step
// makes the exit code non-zero, so the demo doubles as an end-to-end test.
// On a terminal, a progress line says which step of how many is running.
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "../commands.hpp"
#include "progress.hpp"
#include "sections.hpp"
#include "strata/version.hpp"

namespace strata::cli {

const std::vector<std::string>& demo_sections() {
    static const std::vector<std::string> names{"flagship", "regions", "mpi",      "monitor", "runtime", "ocr-dist",
                                                "external", "shm",     "workflow", "dsm",     "video"};
    return names;
}

int run_demo(const DemoOptions& options) {
    for (const auto& name : options.only) {
        if (std::find(demo_sections().begin(), demo_sections().end(), name) == demo_sections().end()) {
            fmt::print(stderr, "strata demo: --only {}: no such section (sections: {})\n", name,
                       fmt::join(demo_sections(), ", "));
            return 2;
        }
    }
    const auto wanted = [&](const std::string& name) {
        return options.only.empty() || std::find(options.only.begin(), options.only.end(), name) != options.only.end();
    };
    std::filesystem::path dir = options.dir;
    bool own_dir = false;
    if (dir.empty()) {
        std::string templ = "/var/tmp/strata-demo-XXXXXX";
        if (::mkdtemp(templ.data()) == nullptr) {
            fmt::print(stderr, "strata demo: cannot create a directory under /var/tmp: {}\n", std::strerror(errno));
            return 1;
        }
        dir = templ;
        own_dir = true;
    }
    // `strata demo flagship` keeps its outputs (the plot, the video, the report) where the user is.
    const std::filesystem::path flagship_out =
        options.dir.empty() ? std::filesystem::current_path() / "strata-flagship" : dir / "flagship";
    const auto sections = [&](Tour& tour) {
        if (wanted("flagship") && options.flagship) {
            tour_flagship(tour, flagship_out, FlagshipSize{128, 600, 50, 25, 200}, true);
        } else if (wanted("flagship")) {
            tour_flagship(tour, dir / "flagship", FlagshipSize{}, !own_dir);
        }
        if (wanted("regions")) tour_regions(tour, dir);
        if (wanted("mpi")) tour_mpi(tour, dir);
        if (wanted("monitor")) tour_monitor(tour);
        if (wanted("runtime")) tour_runtime(tour);
        if (wanted("ocr-dist")) tour_ocr_dist(tour, dir);
        if (wanted("external")) tour_external(tour, dir);
        if (wanted("shm")) tour_shm(tour, dir);
        if (wanted("workflow")) tour_workflow(tour, dir);
        if (wanted("dsm")) tour_dsm(tour);
        if (wanted("video")) tour_video(tour, dir);
    };
    Tour plan = Tour::planning_only();
    sections(plan);
    progress::Line line({.enabled = !options.quiet && !options.json, .prefix = "strata demo", .elapsed = true});
    Tour tour(options.json, &line, plan.steps());
    if (!options.json) {
        fmt::print("strata {} demo: storage files in {}\n", version_string, dir.string());
    }
    sections(tour);
    if (own_dir) {
        std::error_code ignored;
        std::filesystem::remove_all(dir, ignored);
    }
    return tour.finish();
}

}  // namespace strata::cli
