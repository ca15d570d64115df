// SPDX-License-Identifier: MIT
// What travels between DSM ranks: one MPI message per protocol message, a
// fixed header followed by the chunk's bytes (has_data) or an error text.
// Also the layout of chunk ids.
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <string_view>

#include "dsm/protocol_table.hpp"

namespace strata::dsm::wire {

/// Kinds: the protocol's wire messages keep their proto::Msg number; the
/// transport's own follow.
enum class Kind : std::uint8_t {
    alloc_req = proto::kWireMsgCount,  ///< client -> home (or locator): create a chunk
    alloc_ack,                         ///< home -> client
    error,                             ///< server -> client: the request failed (code + text)
    adopt,                             ///< locator -> home: become the home of a first-touch chunk
    lock_req,
    lock_grant,
    unlock,
    bye,   ///< client -> server: this client is done
    ping,  ///< "are you there" (answered by the progress loop whatever the user does)
    pong,
    dead,  ///< client -> clients: a rank it found dead (code: the rank; payload: why), before it fails
    // Home replication (Options::replication; replication.cpp):
    replica,      ///< home -> its backup: a copy of what it keeps (code: a ReplicaKind)
    recover,      ///< backup -> every rank: server `code` died, the backup takes its chunks over
    report,       ///< client -> backup: its copy of a chunk of dead server `code` (grant: its state)
    report_lock,  ///< client -> backup: it holds lock `chunk` of dead server `code`
    report_done,  ///< client -> backup: all its reports about dead server `code` were sent
    count_,
};
inline constexpr int kKinds = static_cast<int>(Kind::count_);

std::string_view kind_name(int kind) noexcept;

inline constexpr std::uint8_t kHasData = 1;
inline constexpr std::uint8_t kCached = 2;
inline constexpr std::uint8_t kPublish = 4;
inline constexpr std::uint8_t kUpdate = 8;
inline constexpr std::uint8_t kKept = 16;
inline constexpr std::uint8_t kSubscribed = 32;  ///< report: the client subscribed to the chunk
/// Transport: the message's bytes are in the sender's node arena; the payload is a SharedRef
/// (transport.hpp, same-node sharing). Never seen above the transport.
inline constexpr std::uint8_t kShared = 64;

/// The payload of a kShared message: the whole message (header included) lies in the data of
/// the sender's arena block at `offset`, its first `length` bytes.
struct SharedRef {
    std::uint64_t offset = 0;
    std::uint64_t length = 0;
};

/// What a replica message copies (its header's code).
enum class ReplicaKind : std::uint8_t {
    chunk,        ///< a chunk's size and version; its bytes when has_data (none: zero-filled)
    freed,        ///< the chunk was freed
    lost,         ///< the chunk is lost (payload: why)
    located,      ///< a first-touch chunk this server locates (version: its home's rank + 1, 0: none yet)
    broken_lock,  ///< lock `chunk` is broken (payload: why)
};

struct Header {
    std::uint8_t kind = 0;
    std::uint8_t grant = 0;  ///< proto::CState
    std::uint8_t flags = 0;
    std::uint8_t pad = 0;
    std::int32_t client = -1;  ///< protocol client id of the client concerned
    std::uint32_t code = 0;    ///< error: strata::Errc; lock: lock id
    std::uint32_t pad2 = 0;
    std::uint64_t chunk = 0;
    std::uint64_t version = 0;
    std::uint64_t size = 0;     ///< the chunk's size (also when no bytes follow)
    std::uint64_t targets = 0;  ///< direct grant: proto::Message::targets
};
static_assert(sizeof(Header) == 48);

inline constexpr int kTag = 0x5d5;

Header to_header(const proto::Message& m, std::uint64_t chunk, std::uint64_t size);
proto::Message to_message(const Header& h);
/// `receiver` of decode(): the message reaches a home.
inline constexpr int kAtHome = -1;
/// The protocol message of a header received from a peer, checked before the
/// protocol's tables see it: a kind its receiver takes (a client's message at
/// a home, a home's at a client) and a granted state I..M; at a home
/// (`receiver` kAtHome) the sender's client id 0..clients-1, at client
/// `receiver` that client's own id (a notify's may be -1). Otherwise the
/// cause, for an error naming the sender.
std::expected<proto::Message, std::string> decode(const Header& h, int clients, int receiver);

// Chunk ids: [63..56] server index (home, or locator for first touch)
//            [55..54] policy   [53..40] creating client   [39..0] counter (from 1)
inline constexpr int kPolicyById = 0;
inline constexpr int kPolicyFirstTouch = 1;
inline constexpr int kPolicyNode = 2;

inline std::uint64_t make_id(int server, int policy, int client, std::uint64_t counter) {
    return (static_cast<std::uint64_t>(server) << 56) | (static_cast<std::uint64_t>(policy) << 54) |
           (static_cast<std::uint64_t>(client) << 40) | (counter & 0xFFFFFFFFFFULL);
}
inline int id_server(std::uint64_t id) {
    return static_cast<int>(id >> 56);
}
inline int id_policy(std::uint64_t id) {
    return static_cast<int>((id >> 54) & 3U);
}
inline std::uint64_t id_counter(std::uint64_t id) {
    return id & 0xFFFFFFFFFFULL;
}

}  // namespace strata::dsm::wire
