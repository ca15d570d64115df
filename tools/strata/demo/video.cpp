// SPDX-License-Identifier: MIT
// The video section of `strata demo`: paper 003's pipeline (strata-video,
// docs/video.md) on a small test video, over MPI and then over ZeroMQ on two
// emulated nodes (apps/video/emulate: namespaces, a shaped link, a CPU quota).
// Each distributed run's output must equal the serial run's byte for byte.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <fmt/format.h>

#include "command.hpp"
#include "sections.hpp"

namespace strata::cli {

namespace {

std::string contents(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

Result<std::string> same_as_serial(const std::filesystem::path& out, const std::filesystem::path& serial) {
    const std::string got = contents(out);
    if (got.empty() || got != contents(serial)) {
        return make_error(Errc::internal, "{} ({} bytes) differs from the serial run's output", out.string(),
                          got.size());
    }
    return fmt::format("{} frames identical to the serial run", got.size() / (160 * 120));
}

}  // namespace

void tour_video(Tour& tour, const std::filesystem::path& dir) {
    const std::string section = "Video pipeline: strata-video over MPI, ZeroMQ and the DSM (docs/video.md)";
    const auto work = dir / "video";
    const auto video = work / "in.mkv";
    const auto serial = work / "serial.raw";
    const std::string mpiexec = STRATA_MPIEXEC;

    tour.run(section, "serial: decode, 3x3 edge filter, encode", [&]() -> Result<std::string> {
        auto program = program_beside_strata("strata-video");
        if (!program) return std::unexpected(program.error());
        std::filesystem::create_directories(work);
        auto made =
            run_checked(fmt::format("ffmpeg -v error -nostdin -f lavfi -i testsrc=size=160x120:rate=25 "
                                    "-frames:v 12 -pix_fmt gray -c:v ffv1 {}",
                                    shell_quoted(video.string())));
        if (!made) return std::unexpected(made.error());
        auto run = run_checked(fmt::format("{} --impl serial -i {} -o {}", shell_quoted(program->string()),
                                           shell_quoted(video.string()), shell_quoted(serial.string())));
        if (!run) return std::unexpected(run.error());
        return fmt::format("12 testsrc frames (160x120 grey, FFV1) -> {}", serial.filename().string());
    });

    tour.run(section, "MPI, 1 buffer per worker: 4 ranks", [&]() -> Result<std::string> {
        auto program = program_beside_strata("strata-video");
        if (!program) return std::unexpected(program.error());
        const auto out = work / "mpi.raw";
        auto run = run_checked(fmt::format("{} -n 4 {} --impl mpi-async-multi -i {} -o {}", mpiexec,
                                           shell_quoted(program->string()), shell_quoted(video.string()),
                                           shell_quoted(out.string())));
        if (!run) return std::unexpected(run.error());
        return same_as_serial(out, serial);
    });

    tour.run(section, "DSM, 1 server: frames as chunks, notifications", [&]() -> Result<std::string> {
        auto program = program_beside_strata("strata-video");
        if (!program) return std::unexpected(program.error());
        const auto out = work / "dsm.raw";
        auto run =
            run_checked(fmt::format("{} -n 5 {} --impl dsm -i {} -o {}", mpiexec, shell_quoted(program->string()),
                                    shell_quoted(video.string()), shell_quoted(out.string())));
        if (!run) return std::unexpected(run.error());
        return same_as_serial(out, serial);
    });

    tour.run(section, "ZeroMQ with credits on 2 emulated nodes", [&]() -> Result<std::string> {
        auto program = program_beside_strata("strata-video");
        if (!program) return std::unexpected(program.error());
        const auto out = work / "zmq.raw";
        auto emulate = program_beside_strata("strata-video-emulate");  // apps/video/emulate
        if (!emulate) return std::unexpected(emulate.error());
        // Input, output and a worker on n0, a worker on n1 (30 % of a core, behind a 1 Gbit/s link).
        const std::string job = fmt::format(
            "set -- $STRATA_EMU_ADDRS; $STRATA_EMU_MPIEXEC -hosts n0:3,n1:1 -n 4 {} --impl zmq-credit -i {} -o {} "
            "--zmq-host $1 --zmq-port 27700 --stats {}",
            shell_quoted(program->string()), shell_quoted(video.string()), shell_quoted(out.string()),
            shell_quoted(work.string()));
        std::filesystem::create_directories(work);
        auto run = run_checked(fmt::format("{} --nodes n0=100,n1=30 --rate 1gbit -- sh -c {}",
                                           shell_quoted(emulate->string()), shell_quoted(job)));
        if (!run) return std::unexpected(run.error());
        auto same = same_as_serial(out, serial);
        if (!same) return same;
        const std::string worker1 = contents(work / "rank3.json");
        if (worker1.find("\"node\": \"n1\"") == std::string::npos) {
            return make_error(Errc::internal, "worker 1 did not run on node n1: {}", worker1.substr(0, 300));
        }
        return *same + "; worker 1 ran in namespace n1, links removed after";
    });
}

}  // namespace strata::cli
