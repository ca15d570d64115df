// SPDX-License-Identifier: MIT
// dsm::Node::lock/unlock with real MPICH ranks (docs/dsm.md, "Locks").
//
//   mpiexec -n 5 dsm_lock_test contention <servers> <rounds>
//   mpiexec -n 3 dsm_lock_test misuse
//   dsm_lock_test.sh (mpiexec -disable-auto-cleanup -n 5) dsm_lock_test dead_holder <report dir>
//
// contention: every client, <rounds> times: lock → read the counter chunk →
//   release → yield → write the value + 1 → unlock; an "inside" chunk must
//   read 0 at entry (set to 1 until exit). The counter and the inside chunk
//   are each coherent alone, so only the lock keeps two read-modify-writes
//   apart: a lock that lets two holders in loses increments or finds inside=1.
//   The final count is clients × rounds exactly.
// misuse: unlock without lock, by a client that is not the holder, and twice,
//   and the holder locking again: invalid_argument naming the lock id; the
//   holder still holds it (the other client's lock waits until the holder
//   unlocked, seen through a chunk).
// dead_holder: rank 1 (client 0; rank 0 serves) is SIGKILLed holding lock 7
//   while clients 1 and 2 wait for it; client 3 asks for it after the death.
//   Every survivor gets broken naming lock 7 and rank 1 within the driver's
//   hang bound; unlock(7) fails (it holds nothing), lock 8 works. Survivors write
//   "ok:"/"FAIL:" lines to <report dir>/rank<r>.txt (see dsm_failure_test.cpp
//   for why files and why _Exit).
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "dsm_test.hpp"

namespace {

using strata::dsm::ChunkId;
using strata::dsm::Node;
using strata::dsm::Options;

std::uint64_t read_u64(Node& node, ChunkId id) {
    auto r = node.acquire_read(id);
    DSM_CHECK_OK(r);
    std::uint64_t v = 0;
    std::memcpy(&v, r->data(), sizeof v);
    DSM_CHECK_OK(node.release(id));
    return v;
}

void write_u64(Node& node, ChunkId id, std::uint64_t v) {
    auto w = node.acquire_write(id);
    DSM_CHECK_OK(w);
    std::memcpy(w->data(), &v, sizeof v);
    DSM_CHECK_OK(node.release(id));
}

// Chunks of client 0, shared with every client.
void allocate_shared(Node& node, ChunkId* ids, int n) {
    if (node.client_index() == 0) {
        for (int i = 0; i < n; ++i) {
            auto id = node.allocate(8);
            DSM_CHECK_OK(id);
            ids[i] = *id;
        }
    }
    MPI_Bcast(ids, n, MPI_UINT64_T, 0, node.clients_comm());
}

template <class T>
bool is_error(const strata::Result<T>& r, strata::Errc code, const std::string& needle) {
    return !r && r.error().code == code && r.error().message.find(needle) != std::string::npos;
}

void expect_error(const strata::Result<void>& r, strata::Errc code, const std::string& needle, int line) {
    if (!is_error(r, code, needle)) {
        std::fprintf(stderr, "rank %d: line %d: got '%s', expected %s naming '%s'\n", dsm_test::g_rank, line,
                     r ? "ok" : r.error().what().c_str(), std::string(strata::to_string(code)).c_str(), needle.c_str());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}
#define EXPECT_ERROR(r, code, needle) expect_error((r), strata::Errc::code, (needle), __LINE__)

void contention(Node& node, int rounds) {
    ChunkId ids[2] = {};  // counter, inside
    allocate_shared(node, ids, 2);
    DSM_CHECK_OK(node.barrier());
    // Lock ids 1 and 2: with several servers they are served by different ones.
    for (const std::uint32_t lock : {1U, 2U}) {
        for (int i = 0; i < rounds; ++i) {
            DSM_CHECK_OK(node.lock(lock));
            DSM_CHECK(read_u64(node, ids[1]) == 0);
            write_u64(node, ids[1], 1);
            const std::uint64_t v = read_u64(node, ids[0]);
            std::this_thread::yield();
            write_u64(node, ids[0], v + 1);
            write_u64(node, ids[1], 0);
            DSM_CHECK_OK(node.unlock(lock));
        }
        DSM_CHECK_OK(node.barrier());
        const auto expected =
            static_cast<std::uint64_t>(node.clients()) * static_cast<std::uint64_t>(rounds) * (lock == 1U ? 1U : 2U);
        const std::uint64_t got = read_u64(node, ids[0]);
        if (got != expected) {
            std::fprintf(stderr, "rank %d: lock %u: counter %llu, expected %llu\n", dsm_test::g_rank, lock,
                         static_cast<unsigned long long>(got), static_cast<unsigned long long>(expected));
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        DSM_CHECK_OK(node.barrier());
    }
    if (node.client_index() == 0) {
        std::printf("%d clients x %d rounds x 2 locks: counter %llu, exact\n", node.clients(), rounds,
                    static_cast<unsigned long long>(read_u64(node, ids[0])));
    }
}

void misuse(Node& node) {
    DSM_CHECK(node.clients() == 2);
    const int me = node.client_index();
    ChunkId held[1] = {};  // 1 while client 0 holds lock 5
    allocate_shared(node, held, 1);
    EXPECT_ERROR(node.unlock(5), invalid_argument, "lock=5");
    EXPECT_ERROR(node.unlock(5), invalid_argument, "not held by this client");
    DSM_CHECK_OK(node.barrier());
    if (me == 0) {
        DSM_CHECK_OK(node.lock(5));
        write_u64(node, held[0], 1);
        // Locks are not recursive: asking again would wait for itself forever.
        EXPECT_ERROR(node.lock(5), invalid_argument, "lock=5");
    }
    DSM_CHECK_OK(node.barrier());
    if (me == 1) {
        EXPECT_ERROR(node.unlock(5), invalid_argument, "lock=5");
        int go = 1;
        MPI_Send(&go, 1, MPI_INT, 0, 0, node.clients_comm());
        // Granted only once client 0 unlocked, after it wrote 0.
        DSM_CHECK_OK(node.lock(5));
        DSM_CHECK(read_u64(node, held[0]) == 0);
        DSM_CHECK_OK(node.unlock(5));
        EXPECT_ERROR(node.unlock(5), invalid_argument, "lock=5");
    } else {
        int go = 0;
        MPI_Recv(&go, 1, MPI_INT, 1, 0, node.clients_comm(), MPI_STATUS_IGNORE);
        // Room for a wrongly granted lock to reach client 1 before the release below.
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        write_u64(node, held[0], 0);
        DSM_CHECK_OK(node.unlock(5));
        EXPECT_ERROR(node.unlock(5), invalid_argument, "lock=5");
    }
    DSM_CHECK_OK(node.barrier());
    if (me == 0) {
        std::printf("unlock without lock, by another client and twice: invalid_argument naming lock=5\n");
    }
}

FILE* g_report = nullptr;

void report(bool ok, const std::string& what, const strata::Result<void>& r) {
    std::fprintf(g_report, "%s rank %d: %s: %s\n", ok ? "ok:" : "FAIL:", dsm_test::g_rank, what.c_str(),
                 r ? "ok" : r.error().what().c_str());
    std::fflush(g_report);
}

// A survivor's view of lock 7 after its holder died: broken, naming the lock
// and the dead holder; the lock is not held by it (unlock fails), lock 8 works.
void survive(Node& node, const char* when) {
    auto r = node.lock(7);
    report(is_error(r, strata::Errc::broken, "lock 7 is broken: its holder rank 1 (client 0, node "),
           fmt::format("lock 7 {} its holder died", when), r);
    r = node.unlock(7);
    report(is_error(r, strata::Errc::invalid_argument, "lock=7"), "unlock of the broken lock 7", r);
    r = node.lock(8);
    report(r.has_value(), "lock 8", r);
    if (r) {
        r = node.unlock(8);
        report(r.has_value(), "unlock 8", r);
    }
}

// Waits (at most 20 s) until every rank but `dead` wrote its "done" line:
// exiting earlier can make mpiexec tear down the job (dsm_failure_test.cpp).
void wait_for_survivors(const std::string& dir, int world, int dead) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    for (int r = 0; r < world; ++r) {
        while (r != dead && std::chrono::steady_clock::now() < deadline) {
            FILE* f = std::fopen(fmt::format("{}/rank{}.txt", dir, r).c_str(), "r");
            char line[1024];
            bool done = false;
            while (f != nullptr && !done && std::fgets(line, sizeof line, f) != nullptr) {
                done = std::strncmp(line, "done", 4) == 0;
            }
            if (f != nullptr) {
                std::fclose(f);
            }
            if (done) {
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
    }
}

void dead_holder(Node& node) {
    DSM_CHECK(node.clients() == 4);
    const int me = node.client_index();
    pid_t pids[4] = {};
    const pid_t self = ::getpid();
    MPI_Allgather(&self, 1, MPI_INT, pids, 1, MPI_INT, node.clients_comm());
    if (me == 0) {
        DSM_CHECK_OK(node.lock(7));
    }
    DSM_CHECK_OK(node.barrier());
    if (me == 0) {
        int ready = 0;
        MPI_Recv(&ready, 1, MPI_INT, 1, 0, node.clients_comm(), MPI_STATUS_IGNORE);
        MPI_Recv(&ready, 1, MPI_INT, 2, 0, node.clients_comm(), MPI_STATUS_IGNORE);
        // Clients 1 and 2 are about to ask for lock 7: give the requests time to queue at the server.
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        ::kill(::getpid(), SIGKILL);
    }
    if (me == 1 || me == 2) {
        int ready = 1;
        MPI_Send(&ready, 1, MPI_INT, 0, 0, node.clients_comm());
        survive(node, "waited for while");
    }
    if (me == 3) {
        DSM_CHECK(dsm_test::wait_until_dead(pids[0]));
        survive(node, "asked for after");
    }
    // Fails (client 0 is dead) but tells the server this client is done.
    (void)node.leave();
}

}  // namespace

int main(int argc, char** argv) {
    dsm_test::init(&argc, &argv);
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "dead_holder") {
        DSM_CHECK(argc > 2);
        const std::string dir = argv[2];
        g_report = std::fopen(fmt::format("{}/rank{}.txt", dir, dsm_test::g_rank).c_str(), "w");
        DSM_CHECK(g_report != nullptr);
        int world = 0;
        MPI_Comm_size(MPI_COMM_WORLD, &world);
        DSM_CHECK(world == 5);
        auto node = Node::join(MPI_COMM_WORLD, Options{.servers = 1,
                                                       .timeout = std::chrono::milliseconds(2000),
                                                       .heartbeat = std::chrono::milliseconds(200)});
        DSM_CHECK_OK(node);
        if (node->is_server()) {
            auto r = node->serve();
            report(r.has_value(), "serve", r);
        } else {
            dead_holder(*node);
        }
        std::fprintf(g_report, "done rank %d\n", dsm_test::g_rank);
        std::fclose(g_report);
        wait_for_survivors(dir, world, 1);
        std::_Exit(0);
    }
    const int servers = mode == "contention" && argc > 2 ? std::atoi(argv[2]) : 1;
    auto node = Node::join(MPI_COMM_WORLD, Options{.servers = servers});
    DSM_CHECK_OK(node);
    if (node->is_server()) {
        DSM_CHECK_OK(node->serve());
    } else if (mode == "contention") {
        DSM_CHECK(argc > 3);
        contention(*node, std::atoi(argv[3]));
        DSM_CHECK_OK(node->leave());
    } else if (mode == "misuse") {
        misuse(*node);
        DSM_CHECK_OK(node->leave());
    } else {
        std::fprintf(stderr, "usage: dsm_lock_test contention <servers> <rounds> | misuse | dead_holder <dir>\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Finalize();
    return 0;
}
