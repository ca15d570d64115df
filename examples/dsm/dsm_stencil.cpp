// SPDX-License-Identifier: MIT
// A 1-D Jacobi stencil whose array lives in strata's distributed shared memory.
//
//   mpiexec -n <ranks> dsm_stencil [servers] [cells per client] [iterations]
//
// The first `servers` ranks serve (they are the homes of the chunks); every
// other rank is a client that owns one chunk of the array. Each iteration a
// client reads its neighbours' chunks (acquire_read: the DSM fetches the last
// released version), then writes its own (acquire_write), with a barrier
// between the read and the write phases. At the end client 0 reads every chunk
// and compares it, bit for bit, with the same stencil computed serially in
// private memory: a stale or torn copy anywhere shows as a difference.
// Exit status 0 when every cell matches, 1 otherwise (or on any DSM error).
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <mpi.h>

#include "strata/dsm.hpp"

namespace {

using strata::dsm::ChunkId;

// Parses a positive integer argument, naming it when it is not one.
bool parse_count(const char* text, const char* name, long max, long& out) {
    errno = 0;
    char* end = nullptr;
    const long value = std::strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || value < 1 || value > max) {
        fmt::print(stderr, "dsm_stencil: {}={}: not an integer in [1, {}]\n", name, text, max);
        return false;
    }
    out = value;
    return true;
}

double initial(long cell) {
    return static_cast<double>((cell * 7) % 13);
}

// One Jacobi step on `cells` with fixed zero boundaries.
void step(const std::vector<double>& in, std::vector<double>& out) {
    const std::size_t n = in.size();
    for (std::size_t i = 0; i < n; ++i) {
        const double left = i == 0 ? 0.0 : in[i - 1];
        const double right = i + 1 == n ? 0.0 : in[i + 1];
        out[i] = (left + in[i] + right) / 3.0;
    }
}

template <typename R>
bool ok(const R& result, const char* what, int rank) {
    if (result) return true;
    fmt::print(stderr, "dsm_stencil: rank {}: {}: {}\n", rank, what, result.error().what());
    return false;
}

// The client side: returns the exit status of this rank.
int run_client(strata::dsm::Node& node, long cells, long iterations) {
    const int me = node.client_index();
    const int clients = node.clients();
    const int rank = node.rank();
    const auto bytes = static_cast<std::size_t>(cells) * sizeof(double);

    auto mine = node.allocate(bytes);
    if (!ok(mine, "allocate", rank)) return 1;
    {
        auto w = node.acquire_write(*mine);
        if (!ok(w, "acquire_write", rank)) return 1;
        auto* d = reinterpret_cast<double*>(w->data());
        for (long i = 0; i < cells; ++i) d[i] = initial(me * cells + i);
        if (!ok(node.release(*mine), "release", rank)) return 1;
    }
    std::vector<ChunkId> ids(static_cast<std::size_t>(clients));
    MPI_Allgather(&*mine, 1, MPI_UINT64_T, ids.data(), 1, MPI_UINT64_T, node.clients_comm());
    if (!ok(node.barrier(), "barrier", rank)) return 1;

    std::vector<double> local(static_cast<std::size_t>(cells) + 2);  // with halo cells
    for (long it = 0; it < iterations; ++it) {
        // Read phase: the halos come from the neighbours' released chunks.
        local.front() = 0.0;
        local.back() = 0.0;
        if (me > 0) {
            auto r = node.acquire_read(ids[static_cast<std::size_t>(me - 1)]);
            if (!ok(r, "acquire_read(left)", rank)) return 1;
            std::memcpy(&local.front(), r->data() + bytes - sizeof(double), sizeof(double));
            if (!ok(node.release(ids[static_cast<std::size_t>(me - 1)]), "release", rank)) return 1;
        }
        if (me + 1 < clients) {
            auto r = node.acquire_read(ids[static_cast<std::size_t>(me + 1)]);
            if (!ok(r, "acquire_read(right)", rank)) return 1;
            std::memcpy(&local.back(), r->data(), sizeof(double));
            if (!ok(node.release(ids[static_cast<std::size_t>(me + 1)]), "release", rank)) return 1;
        }
        if (!ok(node.barrier(), "barrier", rank)) return 1;
        // Write phase: the new values of this client's cells.
        auto w = node.acquire_write(*mine);
        if (!ok(w, "acquire_write", rank)) return 1;
        auto* d = reinterpret_cast<double*>(w->data());
        std::memcpy(local.data() + 1, d, bytes);
        for (long i = 0; i < cells; ++i) {
            d[i] = (local[static_cast<std::size_t>(i)] + local[static_cast<std::size_t>(i) + 1] +
                    local[static_cast<std::size_t>(i) + 2]) /
                   3.0;
        }
        if (!ok(node.release(*mine), "release", rank)) return 1;
        if (!ok(node.barrier(), "barrier", rank)) return 1;
    }

    int status = 0;
    if (me == 0) {
        // The reference: the same stencil, serially, in private memory.
        const long total = cells * clients;
        std::vector<double> a(static_cast<std::size_t>(total));
        std::vector<double> b(a.size());
        for (long i = 0; i < total; ++i) a[static_cast<std::size_t>(i)] = initial(i);
        for (long it = 0; it < iterations; ++it) {
            step(a, b);
            a.swap(b);
        }
        long differ = 0;
        for (int c = 0; c < clients; ++c) {
            auto r = node.acquire_read(ids[static_cast<std::size_t>(c)]);
            if (!ok(r, "acquire_read(check)", rank)) return 1;
            const auto* d = reinterpret_cast<const double*>(r->data());
            for (long i = 0; i < cells; ++i) {
                if (d[i] != a[static_cast<std::size_t>(c * cells + i)]) ++differ;
            }
            if (!ok(node.release(ids[static_cast<std::size_t>(c)]), "release", rank)) return 1;
        }
        const auto sent = node.traffic().total_sent();
        fmt::print(
            "dsm_stencil: {} clients x {} cells, {} servers, {} iterations: {} of {} cells differ from the "
            "serial stencil; client 0 sent {} messages\n",
            clients, cells, node.servers(), iterations, differ, total, sent.messages);
        status = differ == 0 ? 0 : 1;
    }
    MPI_Bcast(&status, 1, MPI_INT, 0, node.clients_comm());
    if (!ok(node.leave(), "leave", rank)) return 1;
    return status;
}

}  // namespace

int main(int argc, char** argv) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    int rank = 0;
    int size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long servers = 1;
    long cells = 1024;
    long iterations = 20;
    const bool args_ok = (argc < 2 || parse_count(argv[1], "servers", size - 1L, servers)) &&
                         (argc < 3 || parse_count(argv[2], "cells", 1L << 24, cells)) &&
                         (argc < 4 || parse_count(argv[3], "iterations", 1L << 20, iterations));
    if (!args_ok || provided != MPI_THREAD_MULTIPLE) {
        if (provided != MPI_THREAD_MULTIPLE && rank == 0) {
            fmt::print(stderr, "dsm_stencil: MPI_THREAD_MULTIPLE not provided\n");
        }
        MPI_Finalize();
        return 2;
    }
    int status = 0;
    {  // the node leaves before MPI_Finalize
        auto node = strata::dsm::Node::join(MPI_COMM_WORLD, {.servers = static_cast<int>(servers)});
        if (!ok(node, "join", rank)) {
            status = 1;
        } else if (node->is_server()) {
            status = ok(node->serve(), "serve", rank) ? 0 : 1;
        } else {
            status = run_client(*node, cells, iterations);
        }
    }
    MPI_Finalize();
    return status;
}
