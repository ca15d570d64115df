// SPDX-License-Identifier: MIT
// Real processes racing on shared chunks through libstrata-dsm.
//
//   mpiexec -n <ranks> dsm_coherence_test <servers> <ops per client> [seed]
//
// Every chunk holds a counter and a pattern derived from it over all its
// bytes (a torn or stale copy shows). Clients acquire for write (counter + 1),
// for read (the counter a client sees never goes back: a read after acquire
// sees the last released write), both in ascending order, evict at random.
// Two clients subscribe (one with update-on-write). Exact accounting at the
// end: every chunk's counter equals the increments of all clients, and each
// subscriber got one notification per release of a write by the others, in
// version order, with the released bytes when asked.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "dsm_test.hpp"

namespace {

using strata::dsm::ChunkId;

void fill(std::span<std::byte> b, std::uint64_t counter) {
    std::memcpy(b.data(), &counter, std::min<std::size_t>(8, b.size()));
    for (std::size_t i = 8; i < b.size(); ++i) {
        b[i] = static_cast<std::byte>((counter * 31 + i) & 0xFFU);
    }
}

std::uint64_t check(std::span<const std::byte> b) {
    std::uint64_t counter = 0;
    std::memcpy(&counter, b.data(), std::min<std::size_t>(8, b.size()));
    for (std::size_t i = 8; i < b.size(); ++i) {
        DSM_CHECK(b[i] == static_cast<std::byte>((counter * 31 + i) & 0xFFU));
    }
    return counter;
}

}  // namespace

int main(int argc, char** argv) {
    dsm_test::init(&argc, &argv);
    const int servers = argc > 1 ? std::atoi(argv[1]) : 1;
    const long ops = argc > 2 ? std::atol(argv[2]) : 500;
    std::uint64_t seed = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : std::random_device{}();
    MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);

    auto node = strata::dsm::Node::join(MPI_COMM_WORLD, {.servers = servers});
    DSM_CHECK_OK(node);
    if (node->is_server()) {
        DSM_CHECK_OK(node->serve());
        MPI_Finalize();
        return 0;
    }
    const int me = node->client_index();
    MPI_Comm cc = node->clients_comm();
    if (me == 0) {
        std::printf("dsm_coherence_test: seed %llu, %d servers, %d clients, %ld ops each\n",
                    static_cast<unsigned long long>(seed), servers, node->clients(), ops);
    }
    // Sizes: a word, a page and a bit, 64 KiB (several MPI protocol paths).
    const std::vector<std::size_t> sizes = {64, 4096 + 100, 65536, 8, 1000};
    const strata::dsm::HomePolicy policies[] = {
        strata::dsm::HomePolicy::by_id(), strata::dsm::HomePolicy::first_touch(),
        strata::dsm::HomePolicy::node(servers - 1), strata::dsm::HomePolicy::by_id(),
        strata::dsm::HomePolicy::first_touch()};
    std::vector<ChunkId> ids(sizes.size());
    if (me == 0) {
        for (std::size_t i = 0; i < sizes.size(); ++i) {
            auto id = node->allocate(sizes[i], policies[i]);
            DSM_CHECK_OK(id);
            ids[i] = *id;
            auto w = node->acquire_write(*id);  // a new chunk is zero-filled: give it counter 0's pattern
            DSM_CHECK_OK(w);
            DSM_CHECK(std::all_of(w->begin(), w->end(), [](std::byte x) { return x == std::byte{0}; }));
            fill(*w, 0);
            DSM_CHECK_OK(node->release(*id));
        }
    }
    MPI_Bcast(ids.data(), static_cast<int>(ids.size()), MPI_UINT64_T, 0, cc);
    const bool subscriber = me < 2 && node->clients() > 2;
    if (subscriber) {
        DSM_CHECK_OK(node->subscribe(ids[static_cast<std::size_t>(me)], {.update_on_write = me == 0}));
    }
    DSM_CHECK_OK(node->barrier());

    std::mt19937_64 rng(seed * 1000003 + static_cast<std::uint64_t>(me));
    std::vector<std::uint64_t> seen(ids.size(), 0);
    std::vector<std::uint64_t> increments(ids.size(), 0);
    std::uniform_int_distribution<std::size_t> pick(0, ids.size() - 1);
    for (long op = 0; op < ops; ++op) {
        const int roll = static_cast<int>(rng() % 100);
        std::size_t a = pick(rng);
        std::size_t b = pick(rng);
        if (a > b) {
            std::swap(a, b);
        }
        if (roll < 40) {
            auto w = node->acquire_write(ids[a]);
            DSM_CHECK_OK(w);
            const std::uint64_t v = check(*w);
            DSM_CHECK(v >= seen[a]);
            fill(*w, v + 1);
            seen[a] = v + 1;
            ++increments[a];
            DSM_CHECK_OK(node->release(ids[a]));
        } else if (roll < 80) {
            auto r = node->acquire_read(ids[a]);
            DSM_CHECK_OK(r);
            const std::uint64_t v = check(*r);
            DSM_CHECK(v >= seen[a]);
            seen[a] = v;
            DSM_CHECK_OK(node->release(ids[a]));
        } else if (roll < 90 && a != b) {
            // Two at once, in ascending order: read a, write b.
            auto r = node->acquire_read(ids[a]);
            DSM_CHECK_OK(r);
            auto w = node->acquire_write(ids[b]);
            DSM_CHECK_OK(w);
            seen[a] = std::max(seen[a], check(*r));
            const std::uint64_t v = check(*w);
            DSM_CHECK(v >= seen[b]);
            fill(*w, v + 1);
            seen[b] = v + 1;
            ++increments[b];
            DSM_CHECK_OK(node->release(ids[b]));
            DSM_CHECK_OK(node->release(ids[a]));
        } else {
            DSM_CHECK_OK(node->evict(ids[a]));
        }
    }
    DSM_CHECK_OK(node->barrier());

    std::vector<std::uint64_t> total(ids.size(), 0);
    MPI_Allreduce(increments.data(), total.data(), static_cast<int>(ids.size()), MPI_UINT64_T, MPI_SUM, cc);
    for (std::size_t i = 0; i < ids.size(); ++i) {
        auto r = node->acquire_read(ids[i]);
        DSM_CHECK_OK(r);
        const std::uint64_t v = check(*r);
        if (v != total[i]) {
            std::fprintf(stderr, "rank %d: chunk %zu holds %llu, %llu increments were released (seed %llu)\n",
                         dsm_test::g_rank, i, static_cast<unsigned long long>(v),
                         static_cast<unsigned long long>(total[i]), static_cast<unsigned long long>(seed));
        }
        DSM_CHECK(v == total[i]);
        DSM_CHECK_OK(node->release(ids[i]));
    }
    if (subscriber) {
        const auto c = static_cast<std::size_t>(me);
        const std::uint64_t expected = total[c] - increments[c];
        std::uint64_t got = 0;
        std::uint64_t last = 0;
        while (got < expected) {
            auto n = node->wait_notification(std::chrono::seconds(20));
            DSM_CHECK_OK(n);
            DSM_CHECK(n->chunk == ids[c]);
            DSM_CHECK(n->version > last);
            last = n->version;
            DSM_CHECK(n->has_data == (me == 0));
            if (n->has_data) {
                DSM_CHECK(n->data().size() == sizes[c]);
                check(n->data());
            }
            ++got;
        }
        DSM_CHECK(!node->wait_notification(std::chrono::milliseconds(200)).has_value());
        std::printf("client %d: %llu notifications, one per release by the others\n", me,
                    static_cast<unsigned long long>(got));
    }
    const auto t = node->traffic();
    const auto sent = t.total_sent();
    std::printf("client %d: %llu messages, %llu bytes sent\n", me, static_cast<unsigned long long>(sent.messages),
                static_cast<unsigned long long>(sent.bytes));
    DSM_CHECK(sent.messages > 0);
    DSM_CHECK_OK(node->leave());
    MPI_Finalize();
    return 0;
}
