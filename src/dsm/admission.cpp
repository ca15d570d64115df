// SPDX-License-Identifier: MIT
// wire::refusal (admission.hpp) and wire::kind_name (wire.hpp): pure logic, in the protocol
// library so that the unit tests run exactly this code.
#include "dsm/admission.hpp"

#include <fmt/format.h>

namespace strata::dsm::wire {

std::string_view kind_name(int kind) noexcept {
    constexpr std::string_view extra[] = {
        "alloc_req", "alloc_ack", "error", "adopt",   "lock_req", "lock_grant", "unlock",      "bye",
        "ping",      "pong",      "dead",  "replica", "recover",  "report",     "report_lock", "report_done"};
    if (kind < proto::kWireMsgCount) {
        return proto::to_string(static_cast<proto::Msg>(kind));
    }
    const int i = kind - proto::kWireMsgCount;
    return i < static_cast<int>(std::size(extra)) ? extra[i] : "unknown";
}

std::string refusal(int kind, int source, int client, const Membership& m) {
    const bool from_client = source >= m.servers && source < m.servers + m.clients;
    const bool from_server = source >= 0 && source < m.servers && source != m.self;
    const auto name = kind_name(kind);
    if (!from_client && !from_server) {
        return fmt::format("a {} message from rank {}, which is neither a client nor another server of this DSM", name,
                           source);
    }
    if (kind < proto::kWireMsgCount) {
        if (from_client && client != source - m.servers) {
            return fmt::format("a {} message from client {} (rank {}) speaks for client {}", name, source - m.servers,
                               source, client);
        }
        if (from_server && (client < 0 || client >= m.clients)) {
            return fmt::format("a {} message forwarded by server rank {} names client {}, not one of the {}", name,
                               source, client, m.clients);
        }
        return {};
    }
    switch (static_cast<Kind>(kind)) {
        case Kind::ping:
        case Kind::pong: return {};
        case Kind::adopt:
            return from_server ? std::string() : fmt::format("an adopt message from rank {}, not a server", source);
        case Kind::alloc_req:
        case Kind::lock_req:
        case Kind::unlock:
            // A client's own, or one its super-peer passes on for it.
            if (from_server && (client < 0 || client >= m.clients)) {
                return fmt::format("a {} message passed on by server rank {} names client {}, not one of the {}", name,
                                   source, client, m.clients);
            }
            return {};
        case Kind::bye:
            return from_client ? std::string() : fmt::format("a {} message from rank {}, not a client", name, source);
        case Kind::replica:
        case Kind::recover:
            return from_server ? std::string() : fmt::format("a {} message from rank {}, not a server", name, source);
        case Kind::report:
        case Kind::report_lock:
        case Kind::report_done:
            if (!from_client) {
                return fmt::format("a {} message from rank {}, not a client", name, source);
            }
            if (client != source - m.servers) {
                return fmt::format("a {} message from client {} (rank {}) speaks for client {}", name,
                                   source - m.servers, source, client);
            }
            return {};
        default: return fmt::format("a {} message from rank {}: a server takes none", name, source);
    }
}

}  // namespace strata::dsm::wire
