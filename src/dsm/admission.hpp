// SPDX-License-Identifier: MIT
// Which rank may send a server which message (docs/dsm.md "Security"). MPI
// names the sending rank of the DSM's own communicator and nobody can forge
// it; what a header says about the client it speaks for can be anything. A
// server takes a message only from a rank that plays the part its kind needs:
// a client speaks for itself only; another server forwards a request of a
// client of the job (first touch, or as that client's super-peer) or hands
// over a chunk (adopt).
#pragma once

#include <string>

#include "dsm/wire.hpp"

namespace strata::dsm::wire {

struct Membership {
    int servers = 0;
    int clients = 0;
    int self = 0;  ///< the receiving server's rank
};

/// Empty when the server may take a message of `kind` from `source` whose header names client
/// `client`; otherwise why it is refused.
std::string refusal(int kind, int source, int client, const Membership& m);

}  // namespace strata::dsm::wire
