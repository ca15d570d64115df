// SPDX-License-Identifier: MIT
// Helpers of the DSM's MPI test programs: CHECK macros that abort the job
// with the rank and the failed condition, and the join every program does.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include <mpi.h>

#include "strata/dsm.hpp"

namespace dsm_test {

inline int g_rank = -1;

#define DSM_CHECK(cond)                                                                                                \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            std::fprintf(stderr, "rank %d: %s:%d: CHECK(%s) failed\n", ::dsm_test::g_rank, __FILE__, __LINE__, #cond); \
            std::fflush(stderr);                                                                                       \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                                              \
        }                                                                                                              \
    } while (false)

#define DSM_CHECK_OK(result)                                                                     \
    do {                                                                                         \
        if (!(result)) {                                                                         \
            std::fprintf(stderr, "rank %d: %s:%d: %s\n", ::dsm_test::g_rank, __FILE__, __LINE__, \
                         (result).error().what().c_str());                                       \
            std::fflush(stderr);                                                                 \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                        \
        }                                                                                        \
    } while (false)

inline void init(int* argc, char*** argv) {
    int provided = 0;
    MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    if (provided != MPI_THREAD_MULTIPLE) {
        std::fprintf(stderr, "rank %d: MPI_THREAD_MULTIPLE not provided\n", g_rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

// The SIGKILL tests' report file (hydra stops forwarding output once a rank died): "SURVIVOR rank
// <r>: <what>: ok|<errc>" lines, the error's message on the next.
inline FILE* g_report = nullptr;

inline void say(const std::string& what, const strata::Result<void>& r) {
    std::fprintf(g_report, "SURVIVOR rank %d: %s: %s\n", g_rank, what.c_str(),
                 r ? "ok" : std::string(strata::to_string(r.error().code)).c_str());
    if (!r) {
        std::fprintf(g_report, "  message: %s\n", r.error().message.c_str());
    }
    std::fflush(g_report);
}

// Writes `v` into the first 8 bytes of chunk `id` (acquire_write, release).
inline strata::Result<void> write_value(strata::dsm::Node& node, strata::dsm::ChunkId id, std::uint64_t v) {
    auto w = node.acquire_write(id);
    if (!w) {
        return std::unexpected(w.error());
    }
    std::memcpy(w->data(), &v, sizeof v);
    return node.release(id);
}

// Reads the first 8 bytes of chunk `id`: corrupted unless they are `expected`.
inline strata::Result<void> read_value(strata::dsm::Node& node, strata::dsm::ChunkId id, std::uint64_t expected) {
    auto r = node.acquire_read(id);
    if (!r) {
        return std::unexpected(r.error());
    }
    std::uint64_t v = 0;
    std::memcpy(&v, r->data(), sizeof v);
    (void)node.release(id);
    if (v != expected) {
        return strata::make_error(strata::Errc::corrupted, "read {} expected {}", v, expected);
    }
    return {};
}

// True when the file at `path` has a line containing `text`.
inline bool has_line(const std::string& path, const char* text) {
    FILE* f = std::fopen(path.c_str(), "r");
    if (f == nullptr) {
        return false;
    }
    char line[512];
    bool found = false;
    while (!found && std::fgets(line, sizeof line, f) != nullptr) {
        found = std::strstr(line, text) != nullptr;
    }
    std::fclose(f);
    return found;
}

// Whether pid has exited (gone, or a zombie its parent has not reaped yet).
inline bool is_dead(pid_t pid) {
    const std::string stat = "/proc/" + std::to_string(pid) + "/stat";
    FILE* f = std::fopen(stat.c_str(), "r");
    if (f == nullptr) {
        return true;
    }
    char state = '?';
    const int n = std::fscanf(f, "%*d (%*[^)]) %c", &state);
    std::fclose(f);
    return n == 1 && (state == 'Z' || state == 'X');
}

// Waits (at most 10 s) until the process `pid` has exited (gone, or a zombie:
// either way its sockets are closed and it answers no one).
inline bool wait_until_dead(pid_t pid) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
        if (is_dead(pid)) {
            return true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
}

/// This rank's messages and bytes of one kind ("publish", "notify", ...), sent and received;
/// zeros for a kind it never saw.
struct KindTraffic {
    strata::dsm::TrafficCount sent;
    strata::dsm::TrafficCount received;
    strata::dsm::TrafficCount shared;  ///< of sent: handed to a same-node rank by reference
    /// Bytes sent whichever way: through MPI, or by reference (whose MPI message is a header
    /// and a reference, replacing the bytes).
    [[nodiscard]] std::uint64_t bytes_handed_over() const { return sent.bytes + shared.bytes; }
};
inline KindTraffic traffic_of(const strata::dsm::Traffic& t, const std::string& kind) {
    for (std::size_t k = 0; k < t.kinds.size(); ++k) {
        if (t.kinds[k] == kind) {
            return {t.sent[k], t.received[k], t.shared[k]};
        }
    }
    return {};
}

}  // namespace dsm_test
