// SPDX-License-Identifier: MIT
// A DSM job's servers and a failure after the start. Servers are not DSM
// clients and never read the control chunks that carry a client's abort
// notice: before this, they served on until hydra's notice (SIGUSR1, naming
// no rank) or mpiexec ended them. A failing client also sends its notice to
// every server on the job's failure communicator; a server watches for it
// while it serves and ends with the client's reason (which names the lost
// node when a worker was cut off).
#pragma once

#include <mpi.h>

#include <atomic>
#include <thread>

#include "common.hpp"

namespace strata::video {

/// Sends `notice` to every server (ranks 0..servers-1 of `comm`), best effort:
/// never waited for (the caller's leave-together barrier lets MPI progress).
void tell_servers(int servers, MPI_Comm comm, const Header& notice);

/// While it lives, a thread of a server rank watches `comm` for a client's
/// notice; on one it waits a moment (the serve loop relays the abort chunks
/// to the other clients), reports the notice as its error and ends the rank.
class ServerAbortWatch {
public:
    ServerAbortWatch(const Context& ctx, MPI_Comm comm);
    ~ServerAbortWatch();
    ServerAbortWatch(const ServerAbortWatch&) = delete;
    ServerAbortWatch& operator=(const ServerAbortWatch&) = delete;

private:
    void run(const Context& ctx, MPI_Comm comm);
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

}  // namespace strata::video
