// SPDX-License-Identifier: MIT
// The flagship section of `strata demo` (docs/getting-started/flagship.md): every layer in one
// workflow. examples/flagship/flagship.py runs a 2-D heat diffusion as a distributed OCR
// program on 2 ranks (on 2 emulated nodes as root), SIGKILLs it after a checkpoint and runs it
// again, hands frames by handle through a shm port to a Python analysis, encodes them with
// ffmpeg as an external task, steers it through the DSM from the other node, and checks the
// final field and the steering against a serial numpy reference (--check).
#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "command.hpp"
#include "paths.hpp"
#include "sections.hpp"

namespace strata::cli {

namespace {

bool executable(const std::filesystem::path& path) {
    return ::access(path.c_str(), X_OK) == 0;
}

// The Python that has numpy, matplotlib and strata: $STRATA_VENV's, else the source tree's
// .venv (the scripts' directory is a link into it in a build tree), else python3 from PATH.
std::string python(const std::filesystem::path& scripts) {
    if (const char* venv = std::getenv("STRATA_VENV"); venv != nullptr && *venv != '\0') {
        return (std::filesystem::path(venv) / "bin" / "python").string();
    }
    std::error_code ec;
    const auto source = std::filesystem::canonical(scripts, ec).parent_path().parent_path() / ".venv/bin/python";
    return !ec && executable(source) ? source.string() : "python3";
}

// The last line the driver printed that starts with `prefix`, without it.
std::string last_line(const std::string& output, const std::string& prefix) {
    std::istringstream lines(output);
    std::string line, found;
    while (std::getline(lines, line)) {
        if (line.rfind(prefix, 0) == 0) found = line.substr(prefix.size());
    }
    return found;
}

}  // namespace

void tour_flagship(Tour& tour, const std::filesystem::path& out, const FlagshipSize& size, bool kept) {
    const std::string section = "Flagship: one workflow through every layer (docs/getting-started/flagship.md)";
    const std::string name = fmt::format("{}x{} heat on 2 ranks, {} steps: SIGKILL and restart, shm, ffmpeg, DSM",
                                         size.n, size.n, size.steps);
    tour.run(section, name, [&]() -> Result<std::string> {
        const auto scripts = paths::flagship_dir();
        if (!std::filesystem::exists(scripts / "flagship.py")) {
            return make_error(Errc::not_found, "{}: no flagship.py (examples/flagship is installed there)",
                              scripts.string());
        }
        auto heat = program_beside_strata("flagship_heat");
        if (!heat) return std::unexpected(heat.error());
        const std::string driver =
            fmt::format("{} {} --bin {} --out {} --n {} --steps {} --k {} --m {} --kill-at {} --check",
                        shell_quoted(python(scripts)), shell_quoted((scripts / "flagship.py").string()),
                        shell_quoted(heat->parent_path().string()), shell_quoted(out.string()), size.n, size.steps,
                        size.k, size.m, size.kill_at);
        // As root, the ranks go to 2 emulated nodes (network namespaces joined by a link).
        auto emulate = program_beside_strata("strata-video-emulate");
        const bool nodes = ::geteuid() == 0 && emulate.has_value();
        const std::string command =
            nodes ? fmt::format("{} --nodes n0=none,n1=none --rate none -- {}", shell_quoted(emulate->string()), driver)
                  : driver;
        const CommandOutcome run = run_command(command);
        if (run.status != 0) {
            const std::string why = last_line(run.output, "flagship: ");
            return make_error(Errc::io_error, "{} failed: {}", command, why.empty() ? run.output.substr(0, 400) : why);
        }
        return fmt::format("{}: {}; {}; {}", nodes ? "on emulated nodes n0, n1" : "on one machine (not root)",
                           last_line(run.output, "- restart: "), last_line(run.output, "- serial reference: "),
                           kept ? "report " + (out / "report.md").string()
                                : std::string("the plot, video and report: strata demo flagship"));
    });
}

}  // namespace strata::cli
