// SPDX-License-Identifier: MIT
// The DSM section of `strata demo`: examples/dsm/dsm_stencil over mpiexec,
// its array in libstrata-dsm chunks, checked against the serial stencil.
#include <string>

#include <fmt/format.h>

#include "command.hpp"
#include "sections.hpp"

namespace strata::cli {

void tour_dsm(Tour& tour) {
    const std::string section = "Distributed shared memory: libstrata-dsm over MPI (docs/dsm.md)";
    const std::string mpiexec = STRATA_MPIEXEC;

    const auto stencil = [&](int ranks, int servers) -> Result<std::string> {
        auto program = program_beside_strata("dsm_stencil");
        if (!program) return std::unexpected(program.error());
        auto run =
            run_checked(fmt::format("{} -n {} {} {} 512 20", mpiexec, ranks, shell_quoted(program->string()), servers));
        if (!run) return std::unexpected(run.error());
        const auto at = run->output.find("dsm_stencil: ");
        if (at == std::string::npos) return make_error(Errc::internal, "no summary line: {}", run->output);
        const auto end = run->output.find('\n', at);
        return run->output.substr(at + 13, end - at - 13);
    };
    tour.run(section, "a 1-D stencil in DSM chunks, 1 server + 3 clients", [&] { return stencil(4, 1); });
    tour.run(section, "the same stencil with 2 servers (homes spread by id)", [&] { return stencil(5, 2); });
    tour.run(section, "a bad argument is refused, naming it", [&]() -> Result<std::string> {
        auto program = program_beside_strata("dsm_stencil");
        if (!program) return std::unexpected(program.error());
        const auto bad = run_command(fmt::format("{} -n 2 {} 0", mpiexec, shell_quoted(program->string())));
        const auto at = bad.output.find("servers=0");
        if (bad.status == 0 || at == std::string::npos) {
            return make_error(Errc::internal, "servers=0 was not refused by name: {}", bad.output.substr(0, 400));
        }
        return bad.output.substr(at, bad.output.find('\n', at) - at);
    });
}

}  // namespace strata::cli
