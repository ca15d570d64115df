// SPDX-License-Identifier: MIT
// What the channel's MPI test programs (channel_*_test.cpp) share: a failure count that every
// check adds to, MPI's start with the rank count the program needs, the channel under test, and the
// end, where the ranks add up their failures and rank 0 prints the verdict.
//
// Each program is one test: it runs under mpiexec with a fixed number of ranks and exits 0 only
// when no rank counted a failure (2 when started with another rank count).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdio>
#include <memory>
#include <string>

#include "net/mpi_channel.hpp"

namespace strata::test::channel {

inline int failures = 0;

/// Counts a failure, and says which, when `ok` is false.
inline void check(bool ok, const std::string& what) {
    if (!ok) {
        std::fprintf(stderr, "FAIL: %s\n", what.c_str());
        ++failures;
    }
}

/// Starts MPI (thread multiple) and returns this rank, or -1 after MPI_Finalize when the job does
/// not have `ranks` ranks (the caller exits 2).
inline int start(int& argc, char**& argv, int ranks) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    int rank = 0;
    int size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != ranks) {
        if (rank == 0) std::fprintf(stderr, "run with %d ranks, not %d\n", ranks, size);
        MPI_Finalize();
        return -1;
    }
    return rank;
}

/// The channel under test on MPI_COMM_WORLD, tag 1, with `kinds` message kinds and `ping` as the
/// liveness ping; aborts the job when it cannot be made.
inline std::unique_ptr<net::MpiChannel> make(unsigned char kinds, unsigned char ping, const char* who, int rank) {
    auto channel =
        net::MpiChannel::create(MPI_COMM_WORLD, {.tag = 1, .kinds = kinds, .who = who, .ping = {std::byte{ping}}});
    if (!channel) {
        std::fprintf(stderr, "rank %d: %s\n", rank, channel.error().what().c_str());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return std::move(*channel);
}

/// Every rank's failures added up; rank 0 prints the verdict. Returns the sum (collective).
inline int verdict(int rank) {
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) std::printf("%s: %d failures\n", all == 0 ? "ok" : "FAILED", all);
    return all;
}

}  // namespace strata::test::channel
