// SPDX-License-Identifier: MIT
// The super-peer topology (Options::topology, docs/dsm.md "Topology"), seen
// through every rank's event log.
//
//   mpiexec -n 8 dsm_topology_test <dir> super-peer|direct
//
// 4 servers (ranks 0..3) and 4 clients (ranks 4..7) on one node. Each client
// allocates chunks under every home policy and writes them; every client
// reads every chunk; each subscribes to another client's chunk with update on
// write; all count under locks into one chunk; each frees its node() chunks.
// The data read is checked against what its writer wrote, the counter
// against the number of increments.
//
// Then rank 0 reads the 8 event logs. With super-peer: every request a client
// sent went to its super-peer, which the docs' rule makes server c % 4 for
// client c here (every rank on one node); every server passed requests on
// to other servers; the homes' grants and the super-peers' requests are
// spread, each server with at least half its fair share of both. With direct
// (the control, so that the checks are seen to tell the topologies apart):
// some client sent requests to several servers.
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "dsm_test.hpp"

namespace {

using strata::dsm::ChunkId;
using strata::dsm::HomePolicy;

constexpr int kServers = 4;
constexpr int kChunksById = 12;
constexpr std::size_t kChunkSize = 512;
constexpr int kLockRounds = 20;

struct Event {
    bool sent = false;
    std::string kind;
    int peer = -1;
};

std::vector<Event> read_log(const std::string& path) {
    std::ifstream in(path);
    DSM_CHECK(in.good());
    std::vector<Event> events;
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') {
            continue;
        }
        std::istringstream fields(line);
        std::string t, dir;
        Event e;
        fields >> t >> dir >> e.kind >> e.peer;
        DSM_CHECK(dir == "sent" || dir == "recv");
        e.sent = dir == "sent";
        events.push_back(e);
    }
    return events;
}

// Messages a client sends about its own requests: everything but liveness,
// leaving and death notices.
bool is_request(const std::string& kind) {
    return kind != "ping" && kind != "pong" && kind != "bye" && kind != "dead";
}

std::uint64_t pattern(int client, int j, std::size_t i) {
    return (static_cast<std::uint64_t>(client) << 40U) ^ (static_cast<std::uint64_t>(j) << 20U) ^ i;
}

// Chunk j of client c in the gathered ids.
std::size_t slot(int c, int per, int j) {
    return static_cast<std::size_t>(c) * static_cast<std::size_t>(per) + static_cast<std::size_t>(j);
}

void write_chunk(strata::dsm::Node& node, ChunkId id, int client, int j) {
    auto bytes = node.acquire_write(id);
    DSM_CHECK_OK(bytes);
    for (std::size_t i = 0; i < kChunkSize / sizeof(std::uint64_t); ++i) {
        const std::uint64_t v = pattern(client, j, i);
        std::memcpy(bytes->data() + i * sizeof v, &v, sizeof v);
    }
    DSM_CHECK_OK(node.release(id));
}

void check_chunk(strata::dsm::Node& node, ChunkId id, int client, int j) {
    auto bytes = node.acquire_read(id);
    DSM_CHECK_OK(bytes);
    for (std::size_t i = 0; i < kChunkSize / sizeof(std::uint64_t); ++i) {
        std::uint64_t v = 0;
        std::memcpy(&v, bytes->data() + i * sizeof v, sizeof v);
        DSM_CHECK(v == pattern(client, j, i));
    }
    DSM_CHECK_OK(node.release(id));
}

void workload(strata::dsm::Node& node) {
    const int me = node.client_index();
    const int clients = node.clients();
    // Chunk j of every client: by_id, then first_touch, then one per home.
    std::vector<ChunkId> mine;
    for (int j = 0; j < kChunksById; ++j) {
        auto id = node.allocate(kChunkSize);
        DSM_CHECK_OK(id);
        mine.push_back(*id);
    }
    for (int j = 0; j < 2; ++j) {
        auto id = node.allocate(kChunkSize, HomePolicy::first_touch());
        DSM_CHECK_OK(id);
        mine.push_back(*id);
    }
    for (int s = 0; s < kServers; ++s) {
        auto id = node.allocate(kChunkSize, HomePolicy::node(s));
        DSM_CHECK_OK(id);
        mine.push_back(*id);
    }
    ChunkId counter = 0;
    if (me == 0) {
        auto id = node.allocate(sizeof(std::uint64_t));
        DSM_CHECK_OK(id);
        counter = *id;
    }
    MPI_Bcast(&counter, 1, MPI_UINT64_T, 0, node.clients_comm());
    const int per = static_cast<int>(mine.size());
    std::vector<ChunkId> all(mine.size() * static_cast<std::size_t>(clients));
    MPI_Allgather(mine.data(), per, MPI_UINT64_T, all.data(), per, MPI_UINT64_T, node.clients_comm());
    // The first-touch chunks are touched first by the next client (a home on its side).
    const int next = (me + 1) % clients;
    for (int j = kChunksById; j < kChunksById + 2; ++j) {
        auto b = node.acquire_write(all[slot(next, per, j)]);
        DSM_CHECK_OK(b);
        DSM_CHECK_OK(node.release(all[slot(next, per, j)]));
    }
    DSM_CHECK_OK(node.barrier());
    for (int j = 0; j < per; ++j) {
        write_chunk(node, mine[static_cast<std::size_t>(j)], me, j);
    }
    DSM_CHECK_OK(node.subscribe(all[slot(next, per, 0)], {.update_on_write = true}));
    DSM_CHECK_OK(node.barrier());
    for (int c = 0; c < clients; ++c) {
        for (int j = 0; j < per; ++j) {
            check_chunk(node, all[slot(c, per, j)], c, j);
        }
    }
    DSM_CHECK_OK(node.barrier());
    // A new version of each client's first chunk reaches its subscriber, with the bytes.
    write_chunk(node, mine[0], me, 1000);
    auto note = node.wait_notification(std::chrono::seconds(60));
    DSM_CHECK_OK(note);
    DSM_CHECK(note->chunk == all[slot(next, per, 0)] && note->has_data);
    std::uint64_t first = 0;
    std::memcpy(&first, note->data().data(), sizeof first);
    DSM_CHECK(first == pattern(next, 1000, 0));
    DSM_CHECK_OK(node.unsubscribe(all[slot(next, per, 0)]));
    // Increments under locks of every server, each lock passed on by the super-peer: all counted.
    for (int round = 0; round < kLockRounds; ++round) {
        const auto lock_id = static_cast<std::uint32_t>(round % kServers);
        DSM_CHECK_OK(node.lock(lock_id));
        auto b = node.acquire_write(counter);
        DSM_CHECK_OK(b);
        std::uint64_t v = 0;
        std::memcpy(&v, b->data(), sizeof v);
        ++v;
        std::memcpy(b->data(), &v, sizeof v);
        DSM_CHECK_OK(node.release(counter));
        DSM_CHECK_OK(node.unlock(lock_id));
    }
    DSM_CHECK_OK(node.barrier());
    if (me == 0) {
        auto b = node.acquire_read(counter);
        DSM_CHECK_OK(b);
        std::uint64_t v = 0;
        std::memcpy(&v, b->data(), sizeof v);
        DSM_CHECK(v == static_cast<std::uint64_t>(kLockRounds * clients));
        DSM_CHECK_OK(node.release(counter));
    }
    DSM_CHECK_OK(node.barrier());
    for (int s = 0; s < kServers; ++s) {
        DSM_CHECK_OK(node.free(mine[static_cast<std::size_t>(kChunksById + 2 + s)]));
    }
}

void check_logs(const std::string& dir, int size, bool super_peer) {
    std::map<int, std::vector<Event>> logs;
    for (int r = 0; r < size; ++r) {
        logs[r] = read_log(fmt::format("{}/events-{}.txt", dir, r));
    }
    bool some_client_used_several_servers = false;
    for (int r = kServers; r < size; ++r) {
        const int expected = (r - kServers) % kServers;
        std::set<int> servers_sent_to;
        int requests = 0;
        for (const Event& e : logs[r]) {
            if (e.sent && is_request(e.kind)) {
                servers_sent_to.insert(e.peer);
                ++requests;
                if (super_peer && e.peer != expected) {
                    std::fprintf(stderr, "client rank %d sent a %s to rank %d, not its super-peer %d\n", r,
                                 e.kind.c_str(), e.peer, expected);
                    DSM_CHECK(e.peer == expected);
                }
            }
        }
        DSM_CHECK(requests > 0);
        some_client_used_several_servers |= servers_sent_to.size() > 1;
    }
    if (!super_peer) {
        DSM_CHECK(some_client_used_several_servers);
        return;
    }
    std::vector<int> grants(kServers), from_clients(kServers), passed_on(kServers);
    for (int s = 0; s < kServers; ++s) {
        for (const Event& e : logs[s]) {
            grants[static_cast<std::size_t>(s)] += e.sent && e.kind == "grant" ? 1 : 0;
            from_clients[static_cast<std::size_t>(s)] += !e.sent && e.peer >= kServers && is_request(e.kind) ? 1 : 0;
            passed_on[static_cast<std::size_t>(s)] += e.sent && e.peer < kServers && is_request(e.kind) ? 1 : 0;
        }
    }
    int all_grants = 0;
    int all_requests = 0;
    for (int s = 0; s < kServers; ++s) {
        all_grants += grants[static_cast<std::size_t>(s)];
        all_requests += from_clients[static_cast<std::size_t>(s)];
    }
    for (int s = 0; s < kServers; ++s) {
        std::fprintf(stderr, "server %d: %d grants of %d, %d client requests of %d, %d passed on\n", s,
                     grants[static_cast<std::size_t>(s)], all_grants, from_clients[static_cast<std::size_t>(s)],
                     all_requests, passed_on[static_cast<std::size_t>(s)]);
        DSM_CHECK(passed_on[static_cast<std::size_t>(s)] > 0);
        DSM_CHECK(grants[static_cast<std::size_t>(s)] * 2 * kServers >= all_grants);
        DSM_CHECK(from_clients[static_cast<std::size_t>(s)] * 2 * kServers >= all_requests);
    }
}

}  // namespace

int main(int argc, char** argv) {
    dsm_test::init(&argc, &argv);
    DSM_CHECK(argc == 3);
    const std::string dir = argv[1];
    const std::string mode = argv[2];
    DSM_CHECK(mode == "super-peer" || mode == "direct");
    const bool super_peer = mode == "super-peer";
    int size = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    DSM_CHECK(size == 2 * kServers);
    strata::dsm::Options options{.servers = kServers, .event_log = dir + "/events-%r.txt"};
    options.topology = super_peer ? strata::dsm::Topology::super_peer : strata::dsm::Topology::direct;
    {
        auto node = strata::dsm::Node::join(MPI_COMM_WORLD, options);
        DSM_CHECK_OK(node);
        DSM_CHECK(node->topology() == *options.topology);
        if (node->is_server()) {
            DSM_CHECK(node->super_peer() == -1);
            DSM_CHECK_OK(node->serve());
        } else {
            DSM_CHECK(node->super_peer() == (super_peer ? node->client_index() % kServers : -1));
            workload(*node);
            DSM_CHECK_OK(node->leave());
        }
        DSM_CHECK_OK(node->write_event_log());
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (dsm_test::g_rank == 0) {
        check_logs(dir, size, super_peer);
        std::printf("%s: checks passed\n", mode.c_str());
    }
    MPI_Finalize();
    return 0;
}
