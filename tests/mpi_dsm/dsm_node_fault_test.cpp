// SPDX-License-Identifier: MIT
// A DSM workload that a node fault (a killed node, a cut or degraded link)
// interrupts: every rank reports what it saw, with the time, to a file.
//
//   mpiexec -disable-auto-cleanup -n 4 dsm_node_fault_test <report dir> <chunk bytes> <rounds> <pause ms>
//
// Rank 0 serves; clients 0..2 (ranks 1..3) each own chunk c. A round: every
// client fills its chunk with the round's byte (round + c), a barrier, every
// client reads its neighbour's chunk (c + 1) and checks every byte, a
// barrier. So every round moves each chunk across the links twice (its
// owner's write-back to the home, the neighbour's read).
//
// Each rank writes <report dir>/rank<r>.txt: "started on node N", "round K"
// (each round, for the driver's fault timing), then either "done: K rounds
// checked" or "error at <CLOCK_REALTIME s>: <code>: <message>", and exits 1
// on an error (0 when done) without MPI_Finalize (which would wait for a lost peer). The
// driver (tests/python/test_faults_across_nodes.py) compares that time with
// the time it injected the fault.
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "dsm_test.hpp"

namespace {

using strata::dsm::ChunkId;

FILE* g_report = nullptr;

double realtime() {
    timespec ts{};
    ::clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

[[noreturn]] void fail(const strata::Error& e) {
    std::fprintf(g_report, "error at %.3f: %s: %s\n", realtime(), std::string(strata::to_string(e.code)).c_str(),
                 e.message.c_str());
    std::fclose(g_report);
    std::_Exit(1);
}

template <class T>
T ok(strata::Result<T> r) {
    if (!r) {
        fail(r.error());
    }
    if constexpr (!std::is_void_v<T>) {
        return std::move(*r);
    }
}

void write_round(strata::dsm::Node& node, ChunkId id, int value) {
    auto bytes = ok(node.acquire_write(id));
    std::memset(bytes.data(), value & 0xff, bytes.size());
    ok(node.release(id));
}

void check_round(strata::dsm::Node& node, ChunkId id, int value, int round) {
    auto bytes = ok(node.acquire_read(id));
    for (std::size_t i = 0; i < bytes.size(); ++i) {
        if (bytes[i] != static_cast<std::byte>(value & 0xff)) {
            fail({strata::Errc::corrupted,
                  fmt::format("round {}: byte {} of the neighbour's chunk is {}, expected {}", round, i,
                              static_cast<int>(bytes[i]), value & 0xff),
                  0});
        }
    }
    ok(node.release(id));
}

}  // namespace

int main(int argc, char** argv) {
    dsm_test::init(&argc, &argv);
    DSM_CHECK(argc == 5);
    const std::string dir = argv[1];
    const auto chunk = std::strtoull(argv[2], nullptr, 10);
    const int rounds = std::atoi(argv[3]);
    const auto pause = std::chrono::milliseconds(std::atoi(argv[4]));
    g_report = std::fopen(fmt::format("{}/rank{}.txt", dir, dsm_test::g_rank).c_str(), "w");
    DSM_CHECK(g_report != nullptr);
    std::setvbuf(g_report, nullptr, _IOLBF, 0);
    const char* node_name = std::getenv("STRATA_NODE");
    std::fprintf(g_report, "started on node %s\n", node_name != nullptr ? node_name : "?");
    // The DSM's defaults (timeout 5 s, heartbeat 250 ms): the bound under test is theirs.
    auto node = ok(strata::dsm::Node::join(MPI_COMM_WORLD, {.servers = 1}));
    if (node.is_server()) {
        auto r = node.serve();
        if (!r) {
            fail(r.error());
        }
        std::fprintf(g_report, "serve ended at %.3f: ok\n", realtime());
        std::fclose(g_report);
        std::_Exit(0);
    }
    const int me = node.client_index();
    const int clients = node.clients();
    std::vector<ChunkId> ids(static_cast<std::size_t>(clients));
    if (me == 0) {
        for (auto& id : ids) {
            id = ok(node.allocate(chunk, strata::dsm::HomePolicy::node(0)));
        }
    }
    MPI_Bcast(ids.data(), clients, MPI_UINT64_T, 0, node.clients_comm());
    const int next = (me + 1) % clients;
    for (int round = 1; round <= rounds; ++round) {
        write_round(node, ids[static_cast<std::size_t>(me)], round + me);
        ok(node.barrier());
        check_round(node, ids[static_cast<std::size_t>(next)], round + next, round);
        ok(node.barrier());
        std::fprintf(g_report, "round %d\n", round);
        std::this_thread::sleep_for(pause);
    }
    ok(node.leave());
    std::fprintf(g_report, "done: %d rounds checked\n", rounds);
    std::fclose(g_report);
    // No MPI_Finalize: over UCX's TCP transport MPICH 4.0.2's can deadlock
    // (docs/video.md), and the reports, not mpiexec, are the verdict.
    std::_Exit(0);
}
