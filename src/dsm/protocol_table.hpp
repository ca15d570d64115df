// SPDX-License-Identifier: MIT
// The DSM coherence protocol as pure logic: home-based MESI per chunk,
// serialized at the chunk's home (docs/dsm.md, "Protocol").
//
// Nothing here knows MPI, threads or bytes. A home keeps one HomeEntry per
// chunk it is home of, a client one ClientEntry per chunk it caches; both
// react to a message (or, on a client, a local operation) by looking up the
// rule for (state, event) in one table (kHomeTable, kClientTable in
// protocol_table.cpp) and running that rule's action, which changes the entry
// and returns the messages to send and what to do with payloads:
//
//   home:   store   the incoming payload becomes the home copy (before any
//                   outgoing message with has_data, which carries the home copy)
//   client: install the incoming payload becomes the cached copy
//           outgoing messages with has_data carry the cached copy
//
// The transport (src/dsm/node.cpp) and the in-process explorer
// (tests/unit/dsm_explorer_test.cpp) both drive these functions, so what the
// explorer checks is the protocol the MPI library runs.
//
// Delivery must be FIFO per (sender, receiver) pair; no order across pairs is
// assumed. Client ids are 0..63 (a sharer set is a 64-bit mask).
//
// Thread safety: none; the caller serializes per entry.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace strata::dsm::proto {

using ClientId = int;
inline constexpr int kMaxClients = 64;

/// Client cache states (MESI).
enum class CState : std::uint8_t { I, S, E, M };
/// Directory states at the home. wait_acks and wait_recall are transient: the
/// home waits for invalidation acks or for the owner's recall answer, and
/// queues new requests for the chunk meanwhile.
enum class DState : std::uint8_t { U, S, EM, wait_acks, wait_recall };

/// Every message of the protocol.
enum class Msg : std::uint8_t {
    // client -> home
    read_req,     ///< wants a readable copy; `cached`+`version` name bytes it still holds
    write_req,    ///< wants the exclusive modified copy (also the upgrade from S)
    evict,        ///< dropped a clean copy (S or E)
    write_back,   ///< dropped a modified copy: payload + version
    inv_ack,      ///< answers inv (always, whatever the state)
    recall_ack,   ///< answers recall; payload if it held M; kept_copy if it stays S
    publish,      ///< released a write of a chunk with subscribers: payload + version, stays E;
                  ///< direct: version only, stays M (the targets got the payload)
    subscribe,    ///< wants notify on every new version; `update` = push the data too
    unsubscribe,  ///< stops notifications
    free_req,     ///< frees the chunk everywhere
    // home -> client
    grant,    ///< answers read_req/write_req: state in `grant`, payload unless cached bytes match
    inv,      ///< drop your S copy and ack
    recall,   ///< owner: answer with your data if modified, go to `grant` (S or I)
    notify,   ///< a new version was released (payload with update-on-write); direct: from the writer
    sub_ack,  ///< the subscription is in force: every later release is notified
    freed,    ///< the chunk is gone
    // client-local operations (never sent)
    op_acquire_read,
    op_acquire_write,
    op_release_read,
    op_release_write,
    op_evict,
};
inline constexpr int kMsgCount = static_cast<int>(Msg::op_evict) + 1;
inline constexpr int kWireMsgCount = static_cast<int>(Msg::freed) + 1;

std::string_view to_string(CState s) noexcept;
std::string_view to_string(DState s) noexcept;
std::string_view to_string(Msg m) noexcept;

/// True for messages a client sends to a home.
bool to_home(Msg m) noexcept;

struct Message {
    Msg kind = Msg::read_req;
    ClientId client = -1;       ///< the client that sends (to home) or receives (from home)
    std::uint64_t version = 0;  ///< of the payload, of the cached bytes (requests), or notified
    bool has_data = false;      ///< a payload travels with the message
    bool cached = false;        ///< requests: the client holds bytes of `version`
    CState grant = CState::I;   ///< grant: the state granted; recall: the state to go to
    bool publish = false;       ///< grant: releases must publish (there are subscribers)
    bool update = false;        ///< subscribe: update-on-write
    bool kept_copy = false;     ///< recall_ack: the old owner keeps an S copy
    /// Grant with publish: non-zero makes it direct, each release's payload going to these
    /// update-subscribers only (the home gets the version).
    std::uint64_t targets = 0;

    bool operator==(const Message&) const = default;
};

/// A request waiting at the home (read_req, write_req, subscribe, unsubscribe, free_req).
struct Request {
    Msg kind = Msg::read_req;
    ClientId client = -1;
    std::uint64_t version = 0;
    bool cached = false;
    bool update = false;
};

struct HomeEntry {
    /// Publishing owners send each release's payload straight to the update-subscribers and only
    /// the version to the home ("Direct data path" in docs/dsm.md). Set by the transport when it
    /// creates the entry; while an owner holds such a grant the home copy may be older than
    /// `version`, and a recall or write-back brings the data.
    bool direct = false;
    DState state = DState::U;
    ClientId owner = -1;              ///< EM, wait_recall: the client with E or M
    std::uint64_t sharers = 0;        ///< S, wait_acks: clients with an S copy
    std::uint64_t awaiting = 0;       ///< wait_acks: clients whose inv_ack is due
    std::uint64_t subs = 0;           ///< subscribers
    std::uint64_t subs_update = 0;    ///< subscribers that get the payload pushed
    std::uint64_t version = 0;        ///< version of the home copy
    bool owner_publishes = false;     ///< the owner's grant said publish
    std::uint64_t owner_targets = 0;  ///< the owner's direct grant: subs_update less the owner when granted
    bool owner_kept = true;           ///< wait_recall: the owner has not evicted meanwhile
    Request pending{};                ///< wait_acks, wait_recall: the request being served
    std::deque<Request> queue{};      ///< requests that arrived while transient
};

struct ClientEntry {
    CState state = CState::I;
    std::uint64_t version = 0;    ///< version of the cached bytes
    bool has_bytes = false;       ///< the cache holds bytes of `version` (also in I after an inv)
    int readers = 0;              ///< local read acquisitions in force
    bool writer = false;          ///< a local write acquisition in force
    bool publish = false;         ///< from the grant: release_write publishes
    std::uint64_t targets = 0;    ///< from the grant: non-zero, release_write sends the payload to them
    Msg pending = Msg::op_evict;  ///< op_acquire_read/op_acquire_write while waiting for grant; op_evict = none
    bool has_deferred = false;    ///< an inv or recall arrived while held: answered at release
    Message deferred{};
    bool freed = false;

    [[nodiscard]] bool held() const noexcept { return readers > 0 || writer; }
    [[nodiscard]] bool waiting() const noexcept { return pending != Msg::op_evict; }
};

/// What a step asks of the caller.
struct Step {
    bool ok = true;
    std::string error;         ///< when !ok: which rule refused and why
    bool store = false;        ///< home: the payload becomes the home copy (before `out`)
    bool install = false;      ///< client: the payload becomes the cached copy
    bool hit = false;          ///< client: the operation completed without messages
    bool wait = false;         ///< client: the operation completes on a later grant
    bool completed = false;    ///< client: a grant completed the waiting acquisition
    bool deliver = false;      ///< client: a notify to hand to the subscriber
    bool erase = false;        ///< the entry is gone (freed)
    std::vector<Message> out;  ///< messages to send, in order
};

/// The home's reaction to a client message for one chunk.
Step home_receive(HomeEntry& e, const Message& m);
/// The client's reaction to a home message or a local operation for one chunk
/// (local operations: m.kind is op_*, other fields unused).
Step client_receive(ClientEntry& e, const Message& m);

/// The rule names of the tables, for tests and docs: which action (state, event) runs.
std::string_view home_rule(DState s, Msg m) noexcept;
std::string_view client_rule(CState s, Msg m) noexcept;

}  // namespace strata::dsm::proto
