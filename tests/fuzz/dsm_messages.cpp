// Fuzz target: the DSM's messages (src/dsm/wire.hpp, protocol_table.cpp).
// The input is a stream of wire headers as peers send them, each preceded by
// a byte saying whether it reaches the chunk's home or a client caching it,
// and followed by a byte giving the payload's length. Each header is decoded
// as the node decodes it and drives the coherence protocol's tables, as the
// server and the client progress loop do for one chunk.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "dsm/protocol_table.hpp"
#include "dsm/wire.hpp"
#include "input.hpp"

namespace {

constexpr int kClients = 4;

// What the node hands to the protocol today (server_protocol, client_handle).
std::optional<strata::dsm::proto::Message> decode(const strata::dsm::wire::Header& h, bool at_home) {
    using namespace strata::dsm;
    using wire::Kind;
    if (at_home) {
        if (h.kind >= proto::kWireMsgCount) return std::nullopt;
    } else {
        const auto k = static_cast<Kind>(h.kind);
        if (k == Kind::pong || k == Kind::error || k == Kind::alloc_ack || k == Kind::lock_grant) return std::nullopt;
        if (h.kind == static_cast<int>(proto::Msg::notify) || h.kind == static_cast<int>(proto::Msg::sub_ack)) {
            return std::nullopt;
        }
    }
    return wire::to_message(h);
}

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
    while (in.remaining() >= sizeof(wire::Header) + 2) {
        const bool at_home = (in.byte() & 1U) != 0;
        const auto header = in.take<wire::Header>();
        const std::size_t payload = in.byte();
        (void)payload;
        auto message = decode(header, at_home);
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
