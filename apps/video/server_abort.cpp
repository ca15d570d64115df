// SPDX-License-Identifier: MIT
// A DSM job's servers and a failure after the start (server_abort.hpp).
#include "server_abort.hpp"

#include <chrono>

#include <fmt/format.h>

namespace strata::video {
namespace {

constexpr int tag_server_abort = 0x5e7;  // on the failure communicator only: never meets the pipeline's tags

}  // namespace

void tell_servers(int servers, MPI_Comm comm, const Header& notice) {
    static Header sent;  // outlives the sends, which are never waited for
    sent = notice;
    for (int s = 0; s < servers; ++s) {
        MPI_Request request = MPI_REQUEST_NULL;
        if (MPI_Isend(&sent, sizeof sent, MPI_BYTE, s, tag_server_abort, comm, &request) == MPI_SUCCESS) {
            MPI_Request_free(&request);
        }
    }
}

ServerAbortWatch::ServerAbortWatch(const Context& ctx, MPI_Comm comm)
    : thread_([this, &ctx, comm] { run(ctx, comm); }) {}

ServerAbortWatch::~ServerAbortWatch() {
    stop_ = true;
    thread_.join();
}

void ServerAbortWatch::run(const Context& ctx, MPI_Comm comm) {
    while (!stop_.load()) {
        int flag = 0;
        MPI_Status status;
        if (MPI_Iprobe(MPI_ANY_SOURCE, tag_server_abort, comm, &flag, &status) != MPI_SUCCESS) return;
        if (flag != 0) {
            Header notice;
            MPI_Recv(&notice, sizeof notice, MPI_BYTE, status.MPI_SOURCE, tag_server_abort, comm, MPI_STATUS_IGNORE);
            // The notice may overtake the abort chunk it follows: the serve loop relays that to the
            // other clients meanwhile. Shorter than the clients' leave-together barrier (1 s), so
            // no client has exited yet and hydra's notice does not come first.
            std::this_thread::sleep_for(std::chrono::milliseconds(300));
            ctx.error(fmt::format("peer_dead: the job was aborted by {}", notice.get_text()));
            ctx.exit_now(1);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}

}  // namespace strata::video
