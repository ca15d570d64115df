// `strata demo`: runs every capability that exists on small data and prints
// what happened. Each layer adds its own section (sections.hpp); a failed step
// makes the exit code non-zero, so the demo doubles as an end-to-end test.
#include <unistd.h>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "../commands.hpp"
#include "sections.hpp"
#include "strata/version.hpp"

namespace strata::cli {

int run_demo(const DemoOptions& options) {
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
    Tour tour(options.json);
    if (!options.json) {
        fmt::print("strata {} demo: storage files in {}\n", version_string, dir.string());
    }
    tour_regions(tour, dir);
    tour_mpi(tour, dir);
    tour_monitor(tour);
    tour_runtime(tour);
    tour_shm(tour, dir);
    tour_workflow(tour, dir);
    tour_video(tour, dir);
    if (own_dir) {
        std::error_code ignored;
        std::filesystem::remove_all(dir, ignored);
    }
    return tour.finish();
}

}  // namespace strata::cli
