// SPDX-License-Identifier: MIT
// The coherence protocol's two tables and their actions (see protocol_table.hpp).
//
// A pair missing from a table is refused: it cannot happen under per-pair FIFO
// delivery when every party follows the protocol, so it is reported, not
// ignored. The tests in tests/unit/dsm_protocol_table_test.cpp enumerate every
// (state, event) pair against hand-written expectations.
#include "dsm/protocol_table.hpp"

#include <bit>

#include <fmt/format.h>

namespace strata::dsm::proto {
namespace {

std::uint64_t bit(ClientId c) {
    return std::uint64_t{1} << static_cast<unsigned>(c);
}

enum class HomeAction : std::uint8_t {
    refuse,
    grant_read,        // U, S: grant E (no other copy) or S
    grant_write,       // U, S: grant M, invalidating other sharers first
    recall_for_read,   // EM: the owner writes back and keeps S
    recall_for_write,  // EM: the owner writes back and drops its copy
    subscribe,         // register; in EM without publishing owner, recall first
    unsubscribe,       // any state
    evict_sharer,      // S, wait_acks
    evict_owner,       // EM, wait_recall
    write_back_owner,  // EM, wait_recall
    publish_owner,     // EM, wait_recall
    inv_ack,           // wait_acks
    recall_ack,        // wait_recall
    enqueue,           // transient states: requests wait their turn
    free_chunk,        // stable states
};

enum class ClientAction : std::uint8_t {
    refuse,
    request_read,
    request_write,
    hit_read,
    hit_write,
    release_read,
    release_write,
    evict,
    take_grant,
    inv,
    recall,
    deliver,
    subscribed,
    freed,
};

struct HomeRule {
    DState state;
    Msg msg;
    HomeAction action;
};
struct ClientRule {
    CState state;
    Msg msg;
    ClientAction action;
};

using enum DState;
using enum Msg;
using HA = HomeAction;
using CA = ClientAction;

// clang-format off
constexpr HomeRule kHomeTable[] = {
    {U, read_req, HA::grant_read},        {U, write_req, HA::grant_write},
    {U, subscribe, HA::subscribe},        {U, unsubscribe, HA::unsubscribe},
    {U, free_req, HA::free_chunk},

    {S, read_req, HA::grant_read},        {S, write_req, HA::grant_write},
    {S, evict, HA::evict_sharer},         {S, subscribe, HA::subscribe},
    {S, unsubscribe, HA::unsubscribe},    {S, free_req, HA::free_chunk},

    {EM, read_req, HA::recall_for_read},  {EM, write_req, HA::recall_for_write},
    {EM, evict, HA::evict_owner},         {EM, write_back, HA::write_back_owner},
    {EM, publish, HA::publish_owner},     {EM, subscribe, HA::subscribe},
    {EM, unsubscribe, HA::unsubscribe},   {EM, free_req, HA::free_chunk},

    {wait_acks, read_req, HA::enqueue},   {wait_acks, write_req, HA::enqueue},
    {wait_acks, evict, HA::evict_sharer}, {wait_acks, inv_ack, HA::inv_ack},
    {wait_acks, subscribe, HA::enqueue},  {wait_acks, unsubscribe, HA::unsubscribe},
    {wait_acks, free_req, HA::enqueue},

    {wait_recall, read_req, HA::enqueue},           {wait_recall, write_req, HA::enqueue},
    {wait_recall, evict, HA::evict_owner},          {wait_recall, write_back, HA::write_back_owner},
    {wait_recall, recall_ack, HA::recall_ack},      {wait_recall, publish, HA::publish_owner},
    {wait_recall, subscribe, HA::enqueue},          {wait_recall, unsubscribe, HA::unsubscribe},
    {wait_recall, free_req, HA::enqueue},
};

constexpr ClientRule kClientTable[] = {
    {CState::I, op_acquire_read, CA::request_read},   {CState::I, op_acquire_write, CA::request_write},
    {CState::I, op_evict, CA::evict},                 {CState::I, grant, CA::take_grant},
    {CState::I, inv, CA::inv},                        {CState::I, recall, CA::recall},
    {CState::I, notify, CA::deliver},                 {CState::I, sub_ack, CA::subscribed},
    {CState::I, freed, CA::freed},

    {CState::S, op_acquire_read, CA::hit_read},       {CState::S, op_acquire_write, CA::request_write},
    {CState::S, op_release_read, CA::release_read},   {CState::S, op_evict, CA::evict},
    {CState::S, grant, CA::take_grant},               {CState::S, inv, CA::inv},
    {CState::S, notify, CA::deliver},                 {CState::S, sub_ack, CA::subscribed},
    {CState::S, freed, CA::freed},

    {CState::E, op_acquire_read, CA::hit_read},       {CState::E, op_acquire_write, CA::hit_write},
    {CState::E, op_release_read, CA::release_read},   {CState::E, op_evict, CA::evict},
    {CState::E, recall, CA::recall},                  {CState::E, notify, CA::deliver},
    {CState::E, sub_ack, CA::subscribed},             {CState::E, freed, CA::freed},

    {CState::M, op_acquire_read, CA::hit_read},       {CState::M, op_acquire_write, CA::hit_write},
    {CState::M, op_release_read, CA::release_read},   {CState::M, op_release_write, CA::release_write},
    {CState::M, op_evict, CA::evict},                 {CState::M, recall, CA::recall},
    {CState::M, notify, CA::deliver},                 {CState::M, sub_ack, CA::subscribed},
    {CState::M, freed, CA::freed},
};
// clang-format on

constexpr auto kHomeIndex = [] {
    std::array<std::array<HomeAction, kMsgCount>, 5> t{};
    for (const auto& r : kHomeTable) {
        t[static_cast<std::size_t>(r.state)][static_cast<std::size_t>(r.msg)] = r.action;
    }
    return t;
}();
constexpr auto kClientIndex = [] {
    std::array<std::array<ClientAction, kMsgCount>, 4> t{};
    for (const auto& r : kClientTable) {
        t[static_cast<std::size_t>(r.state)][static_cast<std::size_t>(r.msg)] = r.action;
    }
    return t;
}();

Step refused(std::string why) {
    Step s;
    s.ok = false;
    s.error = std::move(why);
    return s;
}

// ---- home actions -------------------------------------------------------

Message grant_to(const HomeEntry& e, const Request& r, CState state, bool publish) {
    Message g{.kind = grant, .client = r.client, .version = e.version, .grant = state, .publish = publish};
    g.has_data = !(r.cached && r.version == e.version);
    return g;
}

// The home becomes EM with `r.client` as owner: the grant says whether (and to whom) it publishes.
void grant_ownership(HomeEntry& e, const Request& r, CState state, Step& st) {
    const bool pub = (e.subs & ~bit(r.client)) != 0;
    Message g = grant_to(e, r, state, pub);
    // Without update-subscribers the grant is not direct: the home keeps the data, it survives the writer.
    g.targets = pub && e.direct ? e.subs_update & ~bit(r.client) : 0;
    st.out.push_back(g);
    e.state = EM;
    e.owner = r.client;
    e.owner_publishes = pub;
    e.owner_targets = g.targets;
}

// The update-subscribers a direct owner would send to once `r` (a subscribe or unsubscribe) is in force.
std::uint64_t targets_after(const HomeEntry& e, const Request& r) {
    std::uint64_t upd = e.subs_update;
    if (r.kind == subscribe && r.update) {
        upd |= bit(r.client);
    } else {
        upd &= ~bit(r.client);
    }
    return upd & ~bit(e.owner);
}

// In EM, a change of subscription the owner's grant does not cover takes its copy back first.
bool needs_recall(const HomeEntry& e, const Request& r) {
    if (e.state != EM || r.client == e.owner) {
        return false;
    }
    if (r.kind == subscribe && !e.owner_publishes) {
        return true;  // it would release silently
    }
    return e.direct && targets_after(e, r) != e.owner_targets;
}

// `direct`: the owner sent the payload to its targets; the rest are told of the version only.
void notify_subscribers(const HomeEntry& e, ClientId writer, bool direct, Step& st) {
    const std::uint64_t told = e.subs & ~bit(writer) & ~(direct ? e.owner_targets : 0);
    for (ClientId c = 0; c < kMaxClients; ++c) {
        if ((told & bit(c)) != 0) {
            st.out.push_back({.kind = notify,
                              .client = c,
                              .version = e.version,
                              .has_data = !direct && (e.subs_update & bit(c)) != 0});
        }
    }
}

void apply_request(HomeEntry& e, const Request& r, Step& st);

// Serves queued requests until one leaves the entry transient again.
void drain(HomeEntry& e, Step& st) {
    while (!e.queue.empty() && (e.state == U || e.state == S || e.state == EM)) {
        const Request r = e.queue.front();
        e.queue.pop_front();
        apply_request(e, r, st);
        if (st.erase) {
            return;
        }
    }
}

void do_grant_read(HomeEntry& e, const Request& r, Step& st) {
    if (e.state == U) {
        grant_ownership(e, r, CState::E, st);
    } else {
        st.out.push_back(grant_to(e, r, CState::S, false));
        e.sharers |= bit(r.client);
    }
}

void do_grant_write(HomeEntry& e, const Request& r, Step& st) {
    const std::uint64_t others = e.sharers & ~bit(r.client);
    if (others == 0) {
        grant_ownership(e, r, CState::M, st);
        e.sharers = 0;
        return;
    }
    for (ClientId c = 0; c < kMaxClients; ++c) {
        if ((others & bit(c)) != 0) {
            st.out.push_back({.kind = inv, .client = c});
        }
    }
    e.sharers = others;
    e.awaiting = others;
    e.pending = r;
    e.state = wait_acks;
}

void do_recall(HomeEntry& e, const Request& r, CState to, Step& st) {
    st.out.push_back({.kind = recall, .client = e.owner, .grant = to});
    e.pending = r;
    e.owner_kept = true;
    e.state = wait_recall;
}

void register_subscriber(HomeEntry& e, const Request& r, Step& st) {
    e.subs |= bit(r.client);
    if (r.update) {
        e.subs_update |= bit(r.client);
    } else {
        e.subs_update &= ~bit(r.client);
    }
    st.out.push_back({.kind = sub_ack, .client = r.client, .version = e.version});
}

void unregister_subscriber(HomeEntry& e, const Request& r) {
    e.subs &= ~bit(r.client);
    e.subs_update &= ~bit(r.client);
}

// An owner granted without publish would release silently, and a direct owner
// sends each release to the update-subscribers its grant named: when the
// change is not covered, the owner's copy comes back first (the next grant
// says the new set), and the change is made after that, so a subscriber is
// told of releases after its subscription only, each once.
void do_subscribe(HomeEntry& e, const Request& r, Step& st) {
    if (needs_recall(e, r)) {
        do_recall(e, r, CState::S, st);
        return;
    }
    if (r.kind == subscribe) {
        register_subscriber(e, r, st);
    } else {
        unregister_subscriber(e, r);
    }
}

void do_free(HomeEntry& e, const Request& r, Step& st) {
    const std::uint64_t holders = e.sharers | e.subs | (e.owner >= 0 ? bit(e.owner) : 0);
    for (ClientId c = 0; c < kMaxClients; ++c) {
        if ((holders & bit(c)) != 0 && c != r.client) {
            st.out.push_back({.kind = freed, .client = c});
        }
    }
    st.out.push_back({.kind = freed, .client = r.client});
    st.erase = true;
    e = HomeEntry{};
}

void apply_request(HomeEntry& e, const Request& r, Step& st) {
    switch (r.kind) {
        case read_req:
            if (e.state == EM) {
                do_recall(e, r, CState::S, st);
            } else {
                do_grant_read(e, r, st);
            }
            break;
        case write_req:
            if (e.state == EM) {
                do_recall(e, r, CState::I, st);
            } else {
                do_grant_write(e, r, st);
            }
            break;
        case subscribe:
        case unsubscribe: do_subscribe(e, r, st); break;
        case free_req: do_free(e, r, st); break;
        default: break;
    }
}

void take_new_version(HomeEntry& e, const Message& m, Step& st) {
    st.store = true;
    e.version = m.version;
    // A publishing owner's write-back or recall answer brings a version it published already
    // (a direct owner keeps M after its releases): nobody is told twice.
    if (m.kind == publish || !e.owner_publishes) {
        notify_subscribers(e, m.client, false, st);
    }
}

Step publish_from_owner(HomeEntry& e, const Message& m) {
    Step st;
    if (m.client != e.owner) {
        return refused(
            fmt::format("home in {}: publish from client {}, not the owner {}", to_string(e.state), m.client, e.owner));
    }
    if (m.has_data) {
        take_new_version(e, m, st);
    } else if (e.owner_targets != 0) {
        // Direct: the targets have the payload; the home copy stays older until a recall.
        e.version = m.version;
        notify_subscribers(e, m.client, true, st);
    } else {
        return refused(fmt::format("home in {}: publish without data from client {}, whose grant was not direct",
                                   to_string(e.state), m.client));
    }
    return st;
}

// The owner leaves EM (write-back, eviction, recall): no grant of its is in force any more.
void end_ownership(HomeEntry& e) {
    e.owner = -1;
    e.owner_publishes = false;
    e.owner_targets = 0;
}

Step home_act(HomeAction a, HomeEntry& e, const Message& m) {
    Step st;
    const Request req{.kind = m.kind, .client = m.client, .version = m.version, .cached = m.cached, .update = m.update};
    const bool from_owner = m.client == e.owner;
    switch (a) {
        case HA::refuse:
            return refused(fmt::format("home in {} cannot take {} from client {}", to_string(e.state),
                                       to_string(m.kind), m.client));
        case HA::grant_read: do_grant_read(e, req, st); break;
        case HA::grant_write: do_grant_write(e, req, st); break;
        case HA::recall_for_read:
        case HA::recall_for_write:
            if (from_owner) {
                return refused(fmt::format("home in EM: {} from the owner {} itself", to_string(m.kind), m.client));
            }
            do_recall(e, req, a == HA::recall_for_read ? CState::S : CState::I, st);
            break;
        case HA::subscribe: do_subscribe(e, req, st); break;
        case HA::unsubscribe:
            if (e.state == EM) {
                do_subscribe(e, req, st);  // may recall a direct owner first
            } else {
                unregister_subscriber(e, req);  // no grant in force names a target (transient: after it)
            }
            break;
        case HA::evict_sharer:
            if ((e.sharers & bit(m.client)) == 0) {
                return refused(
                    fmt::format("home in {}: evict from client {}, not a sharer", to_string(e.state), m.client));
            }
            e.sharers &= ~bit(m.client);
            if (e.state == S && e.sharers == 0) {
                e.state = U;
            }
            break;
        case HA::evict_owner:
        case HA::write_back_owner:
            if (!from_owner) {
                return refused(fmt::format("home in {}: {} from client {}, not the owner {}", to_string(e.state),
                                           to_string(m.kind), m.client, e.owner));
            }
            if (a == HA::write_back_owner) {
                take_new_version(e, m, st);
            }
            if (e.state == EM) {
                e.state = U;
                end_ownership(e);
            } else {
                e.owner_kept = false;  // its recall_ack is still coming
            }
            break;
        case HA::publish_owner: return publish_from_owner(e, m);
        case HA::inv_ack:
            if ((e.awaiting & bit(m.client)) == 0) {
                return refused(fmt::format("home in wait_acks: inv_ack from client {}, not awaited", m.client));
            }
            e.awaiting &= ~bit(m.client);
            e.sharers &= ~bit(m.client);
            if (e.awaiting == 0) {
                e.state = e.sharers == 0 ? U : S;
                apply_request(e, e.pending, st);
                drain(e, st);
            }
            break;
        case HA::recall_ack: {
            if (!from_owner) {
                return refused(
                    fmt::format("home in wait_recall: recall_ack from client {}, not the owner {}", m.client, e.owner));
            }
            if (m.has_data) {
                take_new_version(e, m, st);
            }
            const bool kept = m.kept_copy && e.owner_kept;
            e.state = kept ? S : U;
            e.sharers = kept ? bit(e.owner) : 0;
            end_ownership(e);
            apply_request(e, e.pending, st);
            drain(e, st);
            break;
        }
        case HA::enqueue: e.queue.push_back(req); break;
        case HA::free_chunk: do_free(e, req, st); break;
    }
    return st;
}

// ---- client actions -----------------------------------------------------

Step answer_inv(ClientEntry& e, const Message& m, ClientId self) {
    Step st;
    if (e.state == CState::E || e.state == CState::M) {
        return refused(fmt::format("client in {} cannot take inv", to_string(e.state)));
    }
    if (e.held()) {
        e.has_deferred = true;
        e.deferred = m;
        return st;
    }
    e.state = CState::I;  // the bytes stay: a later grant may match their version
    st.out.push_back({.kind = inv_ack, .client = self});
    return st;
}

Step answer_recall(ClientEntry& e, const Message& m, ClientId self) {
    Step st;
    if (e.held()) {
        e.has_deferred = true;
        e.deferred = m;
        return st;
    }
    Message a{.kind = recall_ack, .client = self, .version = e.version};
    a.has_data = e.state == CState::M;
    a.kept_copy = e.state != CState::I && m.grant == CState::S;
    if (e.state != CState::I) {
        e.state = m.grant;
    }
    st.out.push_back(a);
    return st;
}

// After the last local hold ends, the inv or recall that waited is answered.
void answer_deferred(ClientEntry& e, ClientId self, Step& st) {
    if (!e.has_deferred || e.held()) {
        return;
    }
    e.has_deferred = false;
    Step inner = e.deferred.kind == inv ? answer_inv(e, e.deferred, self) : answer_recall(e, e.deferred, self);
    for (auto& o : inner.out) {
        st.out.push_back(o);
    }
}

// The home's grant answers the pending acquire: the bytes (or the cached
// ones, if their version matches) become this client's, held as asked.
Step take_grant(ClientEntry& e, const Message& m) {
    Step st;
    const bool want_write = e.pending == op_acquire_write;
    const bool fits =
        e.waiting() && (want_write ? m.grant == CState::M : (m.grant == CState::S || m.grant == CState::E));
    if (!fits || (!m.has_data && !(e.has_bytes && e.version == m.version))) {
        return refused(fmt::format("client in {}: grant {} v{} does not answer its request", to_string(e.state),
                                   to_string(m.grant), m.version));
    }
    st.install = m.has_data;
    e.has_bytes = true;
    e.version = m.version;
    e.state = m.grant;
    e.publish = m.publish;
    e.targets = m.targets;
    e.pending = op_evict;
    if (want_write) {
        e.writer = true;
    } else {
        ++e.readers;
    }
    st.completed = true;
    return st;
}

// Drops the local copy: a modified one is written back, a clean one reported.
Step evict_chunk(ClientEntry& e, ClientId self) {
    Step st;
    if (e.held() || e.waiting()) {
        return refused(fmt::format("client in {}: evict while held or pending", to_string(e.state)));
    }
    if (e.state == CState::M) {
        st.out.push_back({.kind = write_back, .client = self, .version = e.version, .has_data = true});
    } else if (e.state != CState::I) {
        st.out.push_back({.kind = evict, .client = self});
    }
    e.state = CState::I;
    e.has_bytes = false;
    return st;
}

Step client_act(ClientAction a, ClientEntry& e, const Message& m) {
    Step st;
    const ClientId self = m.client;
    const bool may_start = !e.waiting() && !e.has_deferred && !e.freed;
    switch (a) {
        case CA::refuse:
            return refused(fmt::format("client in {} cannot take {}", to_string(e.state), to_string(m.kind)));
        case CA::request_read:
        case CA::request_write:
            if (!may_start || e.writer || (a == CA::request_write && e.readers > 0)) {
                return refused(fmt::format("client in {}: {} while busy (pending, deferred or held)",
                                           to_string(e.state), to_string(m.kind)));
            }
            e.pending = a == CA::request_read ? op_acquire_read : op_acquire_write;
            st.out.push_back({.kind = a == CA::request_read ? read_req : write_req,
                              .client = self,
                              .version = e.version,
                              .cached = e.has_bytes});
            st.wait = true;
            break;
        case CA::hit_read:
            if (!may_start || e.writer) {
                return refused(fmt::format("client in {}: acquire_read while busy", to_string(e.state)));
            }
            ++e.readers;
            st.hit = true;
            break;
        case CA::hit_write:
            if (!may_start || e.held()) {
                return refused(fmt::format("client in {}: acquire_write while busy", to_string(e.state)));
            }
            e.state = CState::M;
            e.writer = true;
            st.hit = true;
            break;
        case CA::release_read:
            if (e.readers == 0) {
                return refused(fmt::format("client in {}: release_read without acquire_read", to_string(e.state)));
            }
            --e.readers;
            answer_deferred(e, self, st);
            break;
        case CA::release_write:
            if (!e.writer) {
                return refused("client in M: release_write without acquire_write");
            }
            e.writer = false;
            ++e.version;
            if (e.publish && e.targets != 0) {
                // The payload goes to the targets; the home learns the version and keeps the
                // directory, this copy stays the only current one (M) until a recall.
                st.out.push_back({.kind = publish, .client = self, .version = e.version});
                for (ClientId c = 0; c < kMaxClients; ++c) {
                    if ((e.targets & bit(c)) != 0) {
                        st.out.push_back({.kind = notify, .client = c, .version = e.version, .has_data = true});
                    }
                }
            } else if (e.publish) {
                st.out.push_back({.kind = publish, .client = self, .version = e.version, .has_data = true});
                e.state = CState::E;
            }
            answer_deferred(e, self, st);
            break;
        case CA::evict: return evict_chunk(e, self);
        case CA::take_grant: return take_grant(e, m);
        case CA::inv: return answer_inv(e, m, self);
        case CA::recall:
            if (e.state == CState::I && e.held()) {
                return refused("client in I: recall while held");
            }
            return answer_recall(e, m, self);
        case CA::deliver: st.deliver = true; break;
        case CA::subscribed: st.completed = true; break;
        case CA::freed:
            e.freed = true;
            e.state = CState::I;
            e.has_bytes = false;
            st.erase = !e.held() && !e.waiting();
            break;
    }
    return st;
}

}  // namespace

std::string_view to_string(CState s) noexcept {
    constexpr std::string_view n[] = {"I", "S", "E", "M"};
    return n[static_cast<int>(s)];
}

std::string_view to_string(DState s) noexcept {
    constexpr std::string_view n[] = {"U", "S", "EM", "wait_acks", "wait_recall"};
    return n[static_cast<int>(s)];
}

std::string_view to_string(Msg m) noexcept {
    constexpr std::string_view n[] = {
        "read_req",  "write_req",   "evict",        "write_back",    "inv_ack",      "recall_ack",    "publish",
        "subscribe", "unsubscribe", "free_req",     "grant",         "inv",          "recall",        "notify",
        "sub_ack",   "freed",       "acquire_read", "acquire_write", "release_read", "release_write", "evict_local"};
    return n[static_cast<int>(m)];
}

bool to_home(Msg m) noexcept {
    return static_cast<int>(m) <= static_cast<int>(free_req);
}

Step home_receive(HomeEntry& e, const Message& m) {
    if (m.client < 0 || m.client >= kMaxClients) {
        return refused(fmt::format("client id {} outside 0..{}", m.client, kMaxClients - 1));
    }
    if (static_cast<int>(m.kind) >= kMsgCount) {
        return refused(fmt::format("message kind {} unknown", static_cast<int>(m.kind)));
    }
    return home_act(kHomeIndex[static_cast<std::size_t>(e.state)][static_cast<std::size_t>(m.kind)], e, m);
}

Step client_receive(ClientEntry& e, const Message& m) {
    // The tables have a row per state and a column per kind: anything else never indexes them.
    if (static_cast<int>(m.kind) >= kMsgCount || m.grant > CState::M) {
        return refused(fmt::format("message kind {} granting state {} unknown", static_cast<int>(m.kind),
                                   static_cast<int>(m.grant)));
    }
    return client_act(kClientIndex[static_cast<std::size_t>(e.state)][static_cast<std::size_t>(m.kind)], e, m);
}

std::string_view home_rule(DState s, Msg m) noexcept {
    constexpr std::string_view n[] = {"refuse",           "grant_read",       "grant_write",   "recall_for_read",
                                      "recall_for_write", "subscribe",        "unsubscribe",   "evict_sharer",
                                      "evict_owner",      "write_back_owner", "publish_owner", "inv_ack",
                                      "recall_ack",       "enqueue",          "free_chunk"};
    return n[static_cast<std::size_t>(kHomeIndex[static_cast<std::size_t>(s)][static_cast<std::size_t>(m)])];
}

std::string_view client_rule(CState s, Msg m) noexcept {
    constexpr std::string_view n[] = {"refuse",       "request_read",  "request_write", "hit_read",   "hit_write",
                                      "release_read", "release_write", "evict",         "take_grant", "inv",
                                      "recall",       "deliver",       "subscribed",    "freed"};
    return n[static_cast<std::size_t>(kClientIndex[static_cast<std::size_t>(s)][static_cast<std::size_t>(m)])];
}

}  // namespace strata::dsm::proto
