// SPDX-License-Identifier: MIT
// Fuzz target: the DSM's messages (src/dsm/wire.hpp, protocol_table.cpp).
// The input is a stream of wire headers as peers send them, each preceded by
// a byte saying whether it reaches the chunk's home or a client caching it.
// Each header is decoded as the node decodes it (wire::decode) and drives the
// coherence protocol's tables, as the server and the client progress loop do
// for one chunk.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "dsm/protocol_table.hpp"
#include "dsm/wire.hpp"
#include "input.hpp"

namespace {

constexpr int kClients = 4;
constexpr int kSelf = 0;  ///< the client whose cache entry the input drives

void check_step(const strata::dsm::proto::Step& step) {
    if (!step.ok && step.error.empty()) {
        std::fprintf(stderr, "fuzz_dsm_messages: a refused step without a reason\n");
        std::abort();
    }
    for (const auto& out : step.out) {
        if (out.client < 0 || out.client >= kClients) {
            std::fprintf(stderr, "fuzz_dsm_messages: a message to client %d of %d\n", out.client, kClients);
            std::abort();
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace strata::dsm;
    strata::fuzz::Input in(data, size);
    proto::HomeEntry home;
    proto::ClientEntry client;
    while (in.remaining() >= sizeof(wire::Header) + 1) {
        const bool at_home = (in.byte() & 1U) != 0;
        const auto header = in.take<wire::Header>();
        auto message = wire::decode(header, kClients, at_home ? wire::kAtHome : kSelf);
        if (!message) {
            continue;
        }
        const proto::Step step =
            at_home ? proto::home_receive(home, *message) : proto::client_receive(client, *message);
        check_step(step);
        if (step.erase) {
            home = {};
            client = {};
        }
    }
    return 0;
}
