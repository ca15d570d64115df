/* SPDX-License-Identifier: MIT */
/* CHECK and CHECK_MPI for the C programs run under mpiexec (the MPI storage
 * window tests in tests/mpi/ and the storage-windows applications in
 * bench/storage-windows/): a failed check prints the rank, where and why, and
 * aborts the whole job, so no rank is left waiting for the one that failed.
 * Header-only; define _GNU_SOURCE (if wanted) before including it. */
#ifndef STRATA_MPI_CHECK_H
#define STRATA_MPI_CHECK_H

#include <mpi.h>
#include <stdio.h>

/* This process's rank in MPI_COMM_WORLD, or -1 before MPI_Init. */
static inline int check_rank(void) {
    int initialized = 0, rank = -1;
    MPI_Initialized(&initialized);
    if (initialized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank;
}

/* CHECK(condition, "format", args...): on failure print where and why, abort the job. */
#define CHECK(cond, ...)                                                                                    \
    do {                                                                                                    \
        if (!(cond)) {                                                                                      \
            fprintf(stderr, "rank %d: %s:%d: CHECK(%s) failed: ", check_rank(), __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                                                   \
            fputc('\n', stderr);                                                                            \
            fflush(stderr);                                                                                 \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                                   \
        }                                                                                                   \
    } while (0)

/* CHECK_MPI(call): the call must return MPI_SUCCESS. */
#define CHECK_MPI(call)                                                         \
    do {                                                                        \
        int rc_ = (call);                                                       \
        if (rc_ != MPI_SUCCESS) {                                               \
            char text_[MPI_MAX_ERROR_STRING] = "";                              \
            int length_ = 0;                                                    \
            MPI_Error_string(rc_, text_, &length_);                             \
            CHECK(rc_ == MPI_SUCCESS, "%s returned %d: %s", #call, rc_, text_); \
        }                                                                       \
    } while (0)

#endif
