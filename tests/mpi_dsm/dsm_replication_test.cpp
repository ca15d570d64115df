// SPDX-License-Identifier: MIT
// Home replication (Options::replication): a server SIGKILLed loses no chunk.
//
//   mpiexec -disable-auto-cleanup -n 5 dsm_replication_test states|racing|off <report dir>
//
// Ranks 0 and 1 serve, 2..4 are clients 0..2. Rank 1 dies; its keeper is rank 0.
//
// states: before the death, chunks homed at rank 1 are left in every state a
//         client can hold: W written back (the home has it), M modified at
//         client 0 (only client 0 has it), S shared by clients 1 and 2, P
//         published to client 2's update subscription, F a first-touch chunk
//         written back, Z never written; lock 1 (rank 1's) held by client 0.
//         After the death every value reads back, a write invalidates the
//         old sharer, a publish reaches the subscriber, the held lock passes
//         on at its unlock, a new chunk for the dead server works, free works.
// racing: the clients increment 4 counters homed at rank 1 (acquire_write,
//         +1, release; client 2 reads every other round) while rank 1 is
//         killed in the middle; no counter ever goes back, and every counter
//         ends at the exact number of increments the clients made.
// off:    replication off (the control): reading W fails with peer_dead.
//
// Each client writes "SURVIVOR rank <r>: <what>: ok|<errc>" lines to
// <report dir>/rank<r>.txt and exits without MPI_Finalize (which would wait for
// the dead rank); dsm_replication_test.sh checks every line.
#include <signal.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "dsm_test.hpp"

namespace {

using strata::dsm::ChunkId;
using strata::dsm::HomePolicy;

// Exits once every survivor wrote its last line (see dsm_failure_test.cpp: MPICH 4.0's mpiexec
// tears the job down when a proxy of a rank that exited is gone).
[[noreturn]] void end(const std::string& dir) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    for (;;) {
        bool all = true;
        for (int r = 0; r < 5 && all; ++r) {
            if (r != 1) {
                all = dsm_test::has_line(fmt::format("{}/rank{}.txt", dir, r), r < 2 ? "SURVIVOR rank" : "done after");
            }
        }
        if (all || std::chrono::steady_clock::now() > deadline) {
            std::_Exit(0);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

enum Chunk { W, M, S, P, F, Z, X, kChunks };

void states(strata::dsm::Node& node, const std::array<pid_t, 5>& pids) {
    const int me = node.client_index();
    std::array<ChunkId, kChunks> ids{};
    if (me == 0) {
        for (int c = 0; c < kChunks; ++c) {
            auto id = c == F ? node.allocate(8, HomePolicy::first_touch())
                             : node.allocate(8, HomePolicy::node(c == X ? 0 : 1));
            DSM_CHECK_OK(id);
            ids[static_cast<std::size_t>(c)] = *id;
        }
    }
    MPI_Bcast(ids.data(), kChunks, MPI_UINT64_T, 0, node.clients_comm());
    const auto id = [&](Chunk c) { return ids[static_cast<std::size_t>(c)]; };
    if (me == 2) {
        DSM_CHECK_OK(node.subscribe(id(P), {.update_on_write = true}));
    }
    DSM_CHECK_OK(node.barrier());
    if (me == 0) {
        DSM_CHECK_OK(dsm_test::write_value(node, id(W), 101));
        DSM_CHECK_OK(node.evict(id(W)));
        DSM_CHECK_OK(dsm_test::write_value(node, id(M), 102));
        DSM_CHECK_OK(dsm_test::write_value(node, id(S), 103));
        DSM_CHECK_OK(dsm_test::write_value(node, id(P), 104));
        DSM_CHECK_OK(dsm_test::write_value(node, id(X), 106));
    }
    if (me == 1) {
        DSM_CHECK_OK(dsm_test::write_value(node, id(F), 105));  // first touch: its home is client 1's server, rank 1
        DSM_CHECK_OK(node.evict(id(F)));
    }
    if (me == 2) {
        auto n = node.wait_notification(std::chrono::seconds(10));
        DSM_CHECK_OK(n);
        DSM_CHECK(n->version == 1);
    }
    DSM_CHECK_OK(node.barrier());
    if (me == 1 || me == 2) {
        DSM_CHECK_OK(dsm_test::read_value(node, id(S), 103));
    }
    if (me == 0) {
        DSM_CHECK_OK(node.lock(1));  // served by rank 1; held across its death
    }
    DSM_CHECK_OK(node.barrier());
    if (me == 0) {
        std::uint64_t go = 1;
        MPI_Send(&go, 1, MPI_UINT64_T, 1, 99, MPI_COMM_WORLD);
    }
    DSM_CHECK(dsm_test::wait_until_dead(pids[1]));
    if (me == 1) {
        dsm_test::say("read W (written back) after its home died", dsm_test::read_value(node, id(W), 101));
        dsm_test::say("read M (modified at client 0) after its home died", dsm_test::read_value(node, id(M), 102));
        dsm_test::say("read S (shared) after its home died", dsm_test::read_value(node, id(S), 103));
        dsm_test::say("read F (first touch) after its home died", dsm_test::read_value(node, id(F), 105));
        dsm_test::say("read Z (never written) after its home died", dsm_test::read_value(node, id(Z), 0));
        dsm_test::say("read X on the live server", dsm_test::read_value(node, id(X), 106));
    }
    DSM_CHECK_OK(node.barrier());
    if (me == 1) {
        dsm_test::say("write S", dsm_test::write_value(node, id(S), 203));
    }
    DSM_CHECK_OK(node.barrier());
    if (me == 2) {
        dsm_test::say("read S written after the death", dsm_test::read_value(node, id(S), 203));
    }
    if (me == 0) {
        dsm_test::say("publish P", dsm_test::write_value(node, id(P), 204));
    }
    if (me == 2) {
        auto n = node.wait_notification(std::chrono::seconds(10));
        std::uint64_t v = 0;
        if (n && n->has_data && n->data().size() == sizeof v) {
            std::memcpy(&v, n->data().data(), sizeof v);
        }
        dsm_test::say("notification of P after the death",
                      !n ? strata::Result<void>(std::unexpected(n.error()))
                         : (v == 204 && n->version == 2
                                ? strata::Result<void>()
                                : strata::make_error(strata::Errc::corrupted, "version {} value {}", n->version, v)));
    }
    DSM_CHECK_OK(node.barrier());
    if (me == 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));  // client 1 asks meanwhile
        dsm_test::say("unlock lock 1 held across the death", node.unlock(1));
    }
    if (me == 1) {
        auto l = node.lock(1);
        dsm_test::say("lock 1 after its holder unlocked", l ? node.unlock(1) : l);
    }
    DSM_CHECK_OK(node.barrier());
    ChunkId fresh = 0;
    if (me == 0) {
        auto n = node.allocate(8, HomePolicy::node(1));
        dsm_test::say("allocate a chunk homed at the dead server",
                      n ? dsm_test::write_value(node, *n, 107) : strata::Result<void>());
        fresh = n ? *n : 0;
    }
    MPI_Bcast(&fresh, 1, MPI_UINT64_T, 0, node.clients_comm());
    if (me == 2 && fresh != 0) {
        dsm_test::say("read the new chunk", dsm_test::read_value(node, fresh, 107));
    }
    DSM_CHECK_OK(node.barrier());
    if (me == 1) {
        dsm_test::say("free W", node.free(id(W)));
        auto gone = node.acquire_read(id(W));
        dsm_test::say("read W after free is not_found",
                      !gone && gone.error().code == strata::Errc::not_found
                          ? strata::Result<void>()
                          : strata::make_error(strata::Errc::internal, "expected not_found"));
    }
}

// Each client makes at least `rounds` rounds and goes on until it has made
// `after` more once rank 1 is dead, so the increments span the fail-over
// however fast this machine runs the rounds before the kill.
void racing(strata::dsm::Node& node, const std::array<pid_t, 5>& pids, int rounds, int after) {
    const int me = node.client_index();
    constexpr int kCounters = 4;
    std::array<ChunkId, kCounters> ids{};
    if (me == 0) {
        for (auto& c : ids) {
            auto id = node.allocate(8, HomePolicy::node(1));
            DSM_CHECK_OK(id);
            c = *id;
        }
    }
    MPI_Bcast(ids.data(), kCounters, MPI_UINT64_T, 0, node.clients_comm());
    DSM_CHECK_OK(node.barrier());
    if (me == 0) {
        std::uint64_t go = 1;
        MPI_Send(&go, 1, MPI_UINT64_T, 1, 99, MPI_COMM_WORLD);  // it dies a moment later
    }
    std::uint64_t done = 0;
    strata::Result<void> all;
    const auto loop_start = std::chrono::steady_clock::now();
    std::array<std::uint64_t, kCounters> seen{};  // client 2 also reads: a counter never goes back
    int after_death = 0;
    for (int i = 0; all && (i < rounds || after_death < after); ++i) {
        if (dsm_test::is_dead(pids[1])) {
            ++after_death;
        }
        if (std::chrono::steady_clock::now() - loop_start > std::chrono::seconds(20)) {
            all = strata::make_error(strata::Errc::timeout, "{} rounds in 20 s, {} after the death", i, after_death);
            break;
        }
        const auto k = static_cast<std::size_t>((i + me) % kCounters);
        const ChunkId c = ids[k];
        if (me == 2 && i % 2 == 1) {
            auto r = node.acquire_read(c);
            if (!r) {
                all = std::unexpected(r.error());
                break;
            }
            std::uint64_t v = 0;
            std::memcpy(&v, r->data(), sizeof v);
            all = node.release(c);
            if (v < seen[k]) {
                all = strata::make_error(strata::Errc::corrupted, "counter {} went back from {} to {}", k, seen[k], v);
            }
            seen[k] = v;
            continue;
        }
        auto w = node.acquire_write(c);
        if (!w) {
            all = std::unexpected(w.error());
            break;
        }
        std::uint64_t v = 0;
        std::memcpy(&v, w->data(), sizeof v);
        if (v < seen[k]) {
            all = strata::make_error(strata::Errc::corrupted, "counter {} went back from {} to {}", k, seen[k], v);
            break;
        }
        seen[k] = ++v;
        std::memcpy(w->data(), &v, sizeof v);
        all = node.release(c);
        done += all ? 1U : 0U;
        if (i % 8 == 0) {
            std::this_thread::sleep_for(std::chrono::milliseconds(2));  // spread the rounds over the death
        }
    }
    dsm_test::say(fmt::format("{}+ increments racing the death of the counters' home, {}+ after it", rounds, after),
                  all);
    const double loop = std::chrono::duration<double>(std::chrono::steady_clock::now() - loop_start).count();
    DSM_CHECK(dsm_test::wait_until_dead(pids[1]));
    DSM_CHECK_OK(node.barrier());
    double longest = 0;
    MPI_Allreduce(&loop, &longest, 1, MPI_DOUBLE, MPI_MAX, node.clients_comm());
    if (me == 0) {
        // Finding the death takes the 2 s timeout: a loop that long waited for the fail-over.
        dsm_test::say("the increments spanned the fail-over",
                      longest >= 2.0
                          ? strata::Result<void>()
                          : strata::make_error(strata::Errc::internal, "the longest loop took {:.2f} s", longest));
    }
    std::uint64_t total = 0;
    MPI_Allreduce(&done, &total, 1, MPI_UINT64_T, MPI_SUM, node.clients_comm());
    if (me == 0) {
        std::uint64_t sum = 0;
        strata::Result<void> read;
        for (const ChunkId c : ids) {
            auto r = node.acquire_read(c);
            if (!r) {
                read = std::unexpected(r.error());
                break;
            }
            std::uint64_t v = 0;
            std::memcpy(&v, r->data(), sizeof v);
            sum += v;
            (void)node.release(c);
        }
        dsm_test::say(fmt::format("the counters sum to the {} increments made", total),
                      !read ? read
                            : (sum == total ? strata::Result<void>()
                                            : strata::make_error(strata::Errc::corrupted, "sum {} of {}", sum, total)));
    }
}

}  // namespace

int main(int argc, char** argv) {
    dsm_test::init(&argc, &argv);
    const std::string mode = argc > 1 ? argv[1] : "states";
    const std::string dir = argc > 2 ? argv[2] : "/tmp";
    dsm_test::g_report = std::fopen(fmt::format("{}/rank{}.txt", dir, dsm_test::g_rank).c_str(), "w");
    DSM_CHECK(dsm_test::g_report != nullptr);
    int world = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    DSM_CHECK(world == 5);
    std::array<pid_t, 5> pids{};
    const pid_t self = ::getpid();
    MPI_Allgather(&self, 1, MPI_INT, pids.data(), 1, MPI_INT, MPI_COMM_WORLD);
    auto node = strata::dsm::Node::join(MPI_COMM_WORLD, {.servers = 2,
                                                         .replication = mode != "off",
                                                         .timeout = std::chrono::milliseconds(2000),
                                                         .heartbeat = std::chrono::milliseconds(200)});
    DSM_CHECK_OK(node);
    const auto start = std::chrono::steady_clock::now();
    if (node->is_server()) {
        if (node->rank() == 1) {
            std::thread([mode] {
                std::uint64_t go = 0;
                MPI_Recv(&go, 1, MPI_UINT64_T, 2, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                if (mode == "racing") {
                    std::this_thread::sleep_for(std::chrono::milliseconds(150));
                }
                ::kill(::getpid(), SIGKILL);
            }).detach();
        }
        dsm_test::say("serve", node->serve());
        end(dir);
    }
    if (mode == "racing") {
        racing(*node, pids, 400, 50);
    } else if (mode == "off") {
        ChunkId w = 0;
        if (node->client_index() == 0) {
            auto id = node->allocate(8, HomePolicy::node(1));
            DSM_CHECK_OK(id);
            w = *id;
            DSM_CHECK_OK(dsm_test::write_value(*node, w, 101));
            DSM_CHECK_OK(node->evict(w));
            std::uint64_t go = 1;
            MPI_Send(&go, 1, MPI_UINT64_T, 1, 99, MPI_COMM_WORLD);
        }
        MPI_Bcast(&w, 1, MPI_UINT64_T, 0, node->clients_comm());
        DSM_CHECK(dsm_test::wait_until_dead(pids[1]));
        if (node->client_index() == 1) {
            dsm_test::say("read W (written back) after its home died", dsm_test::read_value(*node, w, 101));
        }
    } else {
        states(*node, pids);
    }
    dsm_test::say("leave", node->leave());
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(dsm_test::g_report, "SURVIVOR rank %d: done after %.1f s\n", dsm_test::g_rank, secs);
    std::fclose(dsm_test::g_report);
    end(dir);
}
