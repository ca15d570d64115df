// SPDX-License-Identifier: MIT
// hydra's notice of a failed rank. With `mpiexec -disable-auto-cleanup`, MPICH's
// process manager tells the surviving ranks that a rank died by SIGUSR1, and a
// few milliseconds later its proxies kill a rank that is still running (seen:
// SIGUSR1, SIGUSR1, SIGKILL within 4 ms). So a rank reports and exits at once,
// from the signal handler (write(2) and _exit only), whatever it was doing.
#pragma once

#include "common.hpp"

namespace strata::video {

/// Installs the SIGUSR1 handler for this rank (after MPI_Init, whose own handler it
/// replaces) and ignores SIGPIPE (a write to a dead peer's socket). The report:
/// "<who>: error: peer_dead: mpiexec reports that a rank of the job died (SIGUSR1 from
/// hydra)" and "exiting with status 1", on stderr and in --log-dir.
void exit_on_hydra_notice(const Context& ctx);

/// The file the handler removes before exiting (the output being written), or none.
void remove_on_hydra_notice(const std::string& path);
void keep_on_hydra_notice();

}  // namespace strata::video
