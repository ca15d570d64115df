// SPDX-License-Identifier: MIT
// The MPI section of `strata demo`: storage windows through libstrata-mpi,
// with real mpiexec (MPICH) runs of programs built beside the strata binary.
#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "command.hpp"
#include "paths.hpp"
#include "sections.hpp"

namespace strata::cli {

void tour_mpi(Tour& tour, const std::filesystem::path& dir) {
    const std::string section = "MPI storage windows: libstrata-mpi over PMPI (docs/mpi-storage-windows.md)";
    const std::string mpiexec = STRATA_MPIEXEC;
    const auto run_dir = dir / "mpi";

    tour.run(section, "4 ranks accumulate into a window on a file", [&]() -> Result<std::string> {
        auto program = program_beside_strata("storage_window");
        if (!program) return std::unexpected(program.error());
        std::filesystem::create_directories(run_dir);
        const std::string command =
            fmt::format("{} -n 4 {} {}", mpiexec, shell_quoted(program->string()), shell_quoted(run_dir.string()));
        auto first = run_checked(command);
        if (!first) return std::unexpected(first.error());
        auto second = run_checked(command);
        if (!second) return std::unexpected(second.error());
        // 4 ranks add 0+1+2+3 per run: the second run must continue from the file.
        if (second->output.find("counters went from 6 to 12") == std::string::npos) {
            return make_error(Errc::internal, "the second run did not continue from the file: {}", second->output);
        }
        return fmt::format("second run went on from the file: counters 6 -> 12 in {}",
                           (run_dir / "counters-0.dat").filename().string());
    });

    tour.run(section, "an unmodified MPI binary under LD_PRELOAD", [&]() -> Result<std::string> {
        auto program = program_beside_strata("plain_mpi_windows");
        if (!program) return std::unexpected(program.error());
        const auto lib = paths::library_dir() / "libstrata-mpi.so";
        const auto files = dir / "preload";
        std::filesystem::create_directories(files);
        auto run = run_checked(fmt::format(
            "env STRATA_MPI_WINDOW_HINTS={} {} -n 2 -genv LD_PRELOAD {} {} run",
            shell_quoted(fmt::format("alloc_type=storage,storage_alloc_filename={}/win-%r-%w.dat", files.string())),
            mpiexec, shell_quoted(lib.string()), shell_quoted(program->string())));
        if (!run) return std::unexpected(run.error());
        auto check =
            run_checked(fmt::format("{} check {} 2", shell_quoted(program->string()), shell_quoted(files.string())));
        if (!check) return std::unexpected(check.error());
        std::size_t count = 0;
        for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(files)) {
            ++count;
        }
        return fmt::format("no strata code in the binary; 2 ranks x 2 windows -> {} files, contents verified", count);
    });

    tour.run(section, "a bad hint stops the job with a clear error", [&]() -> Result<std::string> {
        auto program = program_beside_strata("plain_mpi_windows");
        if (!program) return std::unexpected(program.error());
        const auto lib = paths::library_dir() / "libstrata-mpi.so";
        CommandOutcome bad = run_command(fmt::format(
            "env STRATA_MPI_WINDOW_HINTS={} {} -n 2 -genv LD_PRELOAD {} {} run",
            shell_quoted("alloc_type=storage,storage_alloc_factor=1.5,storage_alloc_filename=/nonexistent/%r"), mpiexec,
            shell_quoted(lib.string()), shell_quoted(program->string())));
        if (bad.status == 0) return make_error(Errc::internal, "storage_alloc_factor=1.5 was accepted");
        const auto at = bad.output.find("storage_alloc_factor");
        if (at == std::string::npos) {
            return make_error(Errc::internal, "the error does not name the hint: {}", bad.output.substr(0, 400));
        }
        if (bad.output.find("Invalid MPI_Info value") == std::string::npos) {
            return make_error(Errc::internal, "the job did not fail with MPI_ERR_INFO_VALUE: {}",
                              bad.output.substr(0, 400));
        }
        const auto end = bad.output.find('\n', at);
        return fmt::format("MPI_ERR_INFO_VALUE, \"{}\"", bad.output.substr(at, std::min<std::size_t>(end - at, 80)));
    });
}

}  // namespace strata::cli
