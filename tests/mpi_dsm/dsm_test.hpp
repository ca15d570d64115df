// SPDX-License-Identifier: MIT
// Helpers of the DSM's MPI test programs: CHECK macros that abort the job
// with the rank and the failed condition, and the join every program does.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

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

}  // namespace dsm_test
