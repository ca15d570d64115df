// SPDX-License-Identifier: MIT
// Helpers of the DSM's MPI test programs: CHECK macros that abort the job
// with the rank and the failed condition, and the join every program does.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
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

// Waits (at most 10 s) until the process `pid` has exited (gone, or a zombie:
// either way its sockets are closed and it answers no one).
inline bool wait_until_dead(pid_t pid) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
        const std::string stat = "/proc/" + std::to_string(pid) + "/stat";
        FILE* f = std::fopen(stat.c_str(), "r");
        if (f == nullptr) {
            return true;
        }
        char state = '?';
        const int n = std::fscanf(f, "%*d (%*[^)]) %c", &state);
        std::fclose(f);
        if (n == 1 && (state == 'Z' || state == 'X')) {
            return true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
}

}  // namespace dsm_test
