// SPDX-License-Identifier: MIT
// The workflow section of `strata demo`: synthetic workflows through
// `strata run` (docs/workflow.md), small enough to take a second or two.
#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "command.hpp"
#include "sections.hpp"
#include "strata/workflow.hpp"

namespace strata::cli {

namespace {

namespace wf = strata::workflow;

// Runs `strata run ... --json` (this binary) with a time limit; the report.
Result<wf::Report> strata_run(const std::string& args) {
    const auto self = std::filesystem::read_symlink("/proc/self/exe");
    auto run = run_checked(fmt::format("{} run --json {}", shell_quoted(self.string()), args));
    if (!run) return std::unexpected(run.error());
    return wf::report_from_json(run->output);
}

std::string summary(const wf::Report& r) {
    std::string text =
        fmt::format("{:.0f} MB/s, {:.0f} iterations/s, checksums ok", r.throughput_mb_s, r.iterations_per_s);
    if (!r.edges.empty()) {
        text += fmt::format(", p50 handoff {:.0f} µs", r.edges.front().p50_ns / 1e3);
    }
    return text;
}

}  // namespace

void tour_workflow(Tour& tour, const std::filesystem::path& /*dir*/) {
    const std::string section = "Synthetic workflows: strata run (docs/workflow.md)";

    tour.run(section, "a workflow file with a cycle is refused naming the edge", [&]() -> Result<std::string> {
        auto bad = wf::parse(R"(
[[task]]
name = "a"
data_size = 64
[[task]]
name = "b"
data_size = 64
[[edge]]
from = "a"
to = "b"
method = "shm"
[[edge]]
from = "b"
to = "a"
method = "shm"
)");
        if (bad) {
            return make_error(Errc::internal, "a cyclic workflow was accepted");
        }
        return bad.error().message;
    });

    tour.run(section, "scatter-gather(5) as threads of one process", [&]() -> Result<std::string> {
        auto w = wf::generate({.shape = wf::Shape::scatter_gather,
                               .tasks = 5,
                               .data_size = 1 << 20,
                               .method = wf::Method::threads,
                               .iterations = 50});
        if (!w) return std::unexpected(w.error());
        auto r = wf::run_threads(*w, {});
        if (!r) return std::unexpected(r.error());
        if (r->checksum_errors != 0) return make_error(Errc::internal, "{} checksum errors", r->checksum_errors);
        return summary(*r);
    });

    for (const char* method : {"shm", "copy-from", "mpi"}) {
        tour.run(section, fmt::format("pipeline(3) of processes (mpiexec), method {}", method),
                 [&]() -> Result<std::string> {
                     auto r =
                         strata_run(fmt::format("--shape pipeline --tasks 3 --data-size 1MiB --iterations 50 "
                                                "--method {}",
                                                method));
                     if (!r) return std::unexpected(r.error());
                     if (r->checksum_errors != 0) {
                         return make_error(Errc::internal, "{} checksum errors", r->checksum_errors);
                     }
                     return summary(*r);
                 });
    }
}

}  // namespace strata::cli
