// SPDX-License-Identifier: MIT
// The distributed OCR section of `strata demo`: unmodified OCR programs on two
// ranks through `strata ocr -n 2` (docs/runtime.md, "Distributed OCR"), each
// checked against a serial computation.
#include <sys/wait.h>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "command.hpp"
#include "sections.hpp"

namespace strata::cli {

namespace {

constexpr std::size_t kSide = 64;
constexpr int kSteps = 10;

// The stencil of tests/ocr/dist/apps/stencil.c on the whole grid, in the same
// order of operations, so the distributed result must match it bit for bit.
std::vector<double> serial_stencil(std::vector<double> grid) {
    std::vector<double> next(grid.size());
    const auto at = [&](std::size_t i, std::size_t j) { return grid[i * kSide + j]; };
    for (int s = 0; s < kSteps; ++s) {
        for (std::size_t i = 0; i < kSide; ++i) {
            for (std::size_t j = 0; j < kSide; ++j) {
                const double up = i > 0 ? at(i - 1, j) : 0.0;
                const double down = i + 1 < kSide ? at(i + 1, j) : 0.0;
                const double left = j > 0 ? at(i, j - 1) : 0.0;
                const double right = j + 1 < kSide ? at(i, j + 1) : 0.0;
                next[i * kSide + j] = 0.2 * (at(i, j) + up + down + left + right);
            }
        }
        grid.swap(next);
    }
    return grid;
}

Result<std::string> stencil_on_two_ranks(const std::filesystem::path& dir) {
    auto program = program_beside_strata("ocr_dist_bench_stencil");
    if (!program) return std::unexpected(program.error());
    std::vector<double> grid(kSide * kSide);
    std::mt19937_64 random(26);
    std::uniform_real_distribution<double> values(-1.0, 1.0);
    for (double& v : grid) v = values(random);
    const auto in = dir / "ocr-dist-in.bin";
    const auto out = dir / "ocr-dist-out.bin";
    std::ofstream(in, std::ios::binary)
        .write(reinterpret_cast<const char*>(grid.data()), static_cast<std::streamsize>(grid.size() * sizeof(double)));
    const auto self = std::filesystem::read_symlink("/proc/self/exe");
    const std::string command =
        fmt::format("{} ocr -n 2 {} {} 4 {} {} {}", shell_quoted(self.string()), shell_quoted(program->string()), kSide,
                    kSteps, shell_quoted(in.string()), shell_quoted(out.string()));
    auto run = run_checked(command);
    if (!run) return std::unexpected(run.error());
    std::vector<double> got(grid.size());
    std::ifstream(out, std::ios::binary)
        .read(reinterpret_cast<char*>(got.data()), static_cast<std::streamsize>(got.size() * sizeof(double)));
    const auto want = serial_stencil(grid);
    std::filesystem::remove(in);
    std::filesystem::remove(out);
    if (std::memcmp(got.data(), want.data(), want.size() * sizeof(double)) != 0) {
        return make_error(Errc::internal, "{}: the grid differs from the serial stencil", command);
    }
    return fmt::format("{}x{} grid, 16 tiles placed by affinity on 2 ranks, {} steps: the same bytes as a serial loop",
                       kSide, kSide, kSteps);
}

Result<std::string> reduction_on_two_ranks() {
    auto program = program_beside_strata("ocr_dist_app_reduction");
    if (!program) return std::unexpected(program.error());
    const auto self = std::filesystem::read_symlink("/proc/self/exe");
    const std::string command =
        fmt::format("{} ocr -n 2 {} 2000 4", shell_quoted(self.string()), shell_quoted(program->string()));
    auto run = run_checked(command);
    if (!run) return std::unexpected(run.error());
    const auto& output = run->output;
    return output.substr(0, output.find('\n'));
}

}  // namespace

void tour_ocr_dist(Tour& tour, const std::filesystem::path& dir) {
    const std::string section = "distributed OCR: one program on several ranks (docs/runtime.md)";
    tour.run(section, "strata ocr -n 2: a 2-D stencil with tiles placed by affinity",
             [&] { return stencil_on_two_ranks(dir); });
    tour.run(section, "strata ocr -n 2: a reduction over all ranks", [&] { return reduction_on_two_ranks(); });
}

}  // namespace strata::cli
