// SPDX-License-Identifier: MIT
// mpi: mpiexec in PATH launches one rank of strata-mpi-probe (built next to
// the strata executable), which initialises MPI and reports the library.
// Running through the launcher catches what `which mpiexec` cannot: a
// launcher from one MPI and a library from another, a hostname that does not
// resolve, a transport that fails to initialise.
#include <chrono>
#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "paths.hpp"
#include "probe.hpp"
#include "system.hpp"

namespace strata::doctor {

namespace {

using namespace std::chrono_literals;

constexpr auto kLaunchTimeout = 10s;
constexpr std::string_view kMarker = "strata-mpi-probe: ";

}  // namespace

Capability probe_mpi() {
    Capability cap("mpi", true);
    const auto mpiexec = find_in_path("mpiexec");
    if (!mpiexec) {
        cap.detail = "mpiexec not found in PATH";
        cap.fix = "apt-get install mpich";
        return cap;
    }
    const auto found = strata::cli::paths::find_helper("strata-mpi-probe");
    const auto probe = found.value_or(strata::cli::paths::helper_dir() / "strata-mpi-probe");
    if (!found) {
        cap.detail = fmt::format("mpiexec {}, but {} is missing", *mpiexec, probe.string());
        cap.fix = "build it: cmake --build --preset default --target strata-mpi-probe";
        return cap;
    }

    const auto result = run_command({*mpiexec, "-n", "1", probe.string()}, kLaunchTimeout);
    const auto marker = result.output.find(kMarker);
    if (result.spawn_errno != 0 || result.timed_out || result.exit_code != 0 || marker == std::string::npos) {
        cap.detail = fmt::format("mpiexec {} -n 1 strata-mpi-probe: ", *mpiexec);
        if (result.spawn_errno != 0)
            cap.detail += errno_text(result.spawn_errno);
        else if (result.timed_out)
            cap.detail += "no exit within 10 s (killed)";
        else
            cap.detail += fmt::format("exit code {}: {}", result.exit_code, first_line(result.output));
        cap.fix =
            "check that mpiexec and libmpich come from the same MPI (apt-get install mpich) and that "
            "the hostname resolves";
        return cap;
    }
    cap.status = Status::ok;
    cap.detail = fmt::format("mpiexec {}, {}", *mpiexec,
                             first_line(std::string_view(result.output).substr(marker + kMarker.size())));
    return cap;
}

}  // namespace strata::doctor
