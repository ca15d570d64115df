// SPDX-License-Identifier: MIT
// The distributed mode of the UMT programs (fwi.cpp, heat.cpp): one rank per
// node under `strata ocr -n N` or mpiexec (docs/benchmarks/umt/README.md,
// "Two nodes"). Each rank is a policy domain of strata's distributed OCR
// runtime with its own workers and blocking monitor; mainEdt (rank 0) starts
// one FINISH EDT per rank (placed by affinity), which builds that rank's task
// graph over its share of the slices or rows. Tasks exchange halos with
// blocking MPI calls on MPI_COMM_WORLD (the runtime initialized MPI with
// MPI_THREAD_MULTIPLE; its own messages travel on a duplicate).
//
// A blocked task is visible to a blocking monitor only if its thread sleeps
// in the kernel. MPICH's ch4:ucx spins in MPI_Wait — the paper's remark on
// Omni-Path and InfiniBand, whose user-space transports never block in the
// kernel — so --net-wait=kernel (the default) waits as a kernel-socket MPI
// does: MPI_Testall, then a sleep in the kernel (10 us doubling to 500 us,
// the pauses of the runtime's communication thread) until the next test.
// --net-wait=spin calls MPI_Waitall, which no monitor can see.
#pragma once

#include <mpi.h>
#include <time.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "extensions/ocr-affinity.h"
#include "ocr.h"
#include "umt_common.hpp"

namespace umt::net {

enum class Wait : std::uint64_t { kernel = 0, spin = 1 };

inline Wait parse_wait(const std::string& text) {
    if (text == "kernel") return Wait::kernel;
    if (text == "spin") return Wait::spin;
    std::fprintf(stderr, "umt: bad argument '--net-wait=%s': expected kernel or spin\n", text.c_str());
    std::exit(2);
}

// Wall time tasks spent waiting for the network, and the messages they sent
// and received: the report's network-blocking share.
inline std::atomic<std::uint64_t>& wait_ns() {
    static std::atomic<std::uint64_t> total{0};
    return total;
}
inline std::atomic<std::uint64_t>& messages() {
    static std::atomic<std::uint64_t> total{0};
    return total;
}

// [first, last) of `total` items owned by `rank` of `ranks`: even shares.
inline std::pair<std::uint64_t, std::uint64_t> share(std::uint64_t total, std::uint64_t rank, std::uint64_t ranks) {
    return {total * rank / ranks, total * (rank + 1) / ranks};
}

inline std::uint64_t rank_count() {
    u64 count = 1;
    ocrAffinityCount(AFFINITY_PD, &count);
    return count;
}

inline void check(int rc, const char* call) {
    if (rc == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(rc, text, &length);
    std::fprintf(stderr, "umt: %s: %.*s\n", call, length, text);
    std::exit(1);
}

// The rank the runtime runs this EDT on, checked against MPI's own number.
inline void check_rank(std::uint64_t expected) {
    int rank = 0;
    if (rank_count() > 1) check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
    if (static_cast<std::uint64_t>(rank) != expected) {
        std::fprintf(stderr, "umt: the EDT of rank %llu runs on MPI rank %d\n",
                     static_cast<unsigned long long>(expected), rank);
        std::exit(1);
    }
}

inline void wait_all(MPI_Request* requests, int count, Wait how) {
    const double start = now_s();
    if (how == Wait::spin) {
        check(MPI_Waitall(count, requests, MPI_STATUSES_IGNORE), "MPI_Waitall");
    } else {
        long pause_ns = 10'000;
        for (;;) {
            int done = 0;
            check(MPI_Testall(count, requests, &done, MPI_STATUSES_IGNORE), "MPI_Testall");
            if (done != 0) break;
            const timespec pause{0, pause_ns};
            ::clock_nanosleep(CLOCK_MONOTONIC, 0, &pause, nullptr);
            pause_ns = std::min(2 * pause_ns, 500'000L);
        }
    }
    wait_ns().fetch_add(static_cast<std::uint64_t>((now_s() - start) * 1e9), std::memory_order_relaxed);
}

inline int bytes_count(std::size_t bytes) {
    if (bytes > static_cast<std::size_t>(INT32_MAX)) {
        std::fprintf(stderr, "umt: a halo of %zu bytes is over MPI's int count\n", bytes);
        std::exit(2);
    }
    return static_cast<int>(bytes);
}

// Sends `out` to `peer` and receives as many bytes from it into `in`; returns when both completed.
inline void exchange(std::uint64_t peer, const void* out, void* in, std::size_t bytes, int tag, Wait how) {
    std::array<MPI_Request, 2> requests{};
    const int p = static_cast<int>(peer);
    check(MPI_Irecv(in, bytes_count(bytes), MPI_BYTE, p, tag, MPI_COMM_WORLD, &requests[0]), "MPI_Irecv");
    check(MPI_Isend(out, bytes_count(bytes), MPI_BYTE, p, tag, MPI_COMM_WORLD, &requests[1]), "MPI_Isend");
    wait_all(requests.data(), 2, how);
    messages().fetch_add(2, std::memory_order_relaxed);
}

inline void send(std::uint64_t peer, const void* out, std::size_t bytes, int tag, Wait how) {
    MPI_Request request{};
    check(MPI_Isend(out, bytes_count(bytes), MPI_BYTE, static_cast<int>(peer), tag, MPI_COMM_WORLD, &request),
          "MPI_Isend");
    wait_all(&request, 1, how);
    messages().fetch_add(1, std::memory_order_relaxed);
}

inline void receive(std::uint64_t peer, void* in, std::size_t bytes, int tag, Wait how) {
    MPI_Request request{};
    check(MPI_Irecv(in, bytes_count(bytes), MPI_BYTE, static_cast<int>(peer), tag, MPI_COMM_WORLD, &request),
          "MPI_Irecv");
    wait_all(&request, 1, how);
    messages().fetch_add(1, std::memory_order_relaxed);
}

// "rank":r,"ranks":n,"net_wait":...,"net_wait_s":s,"messages":m for the report.
inline std::string report_fields(std::uint64_t rank, std::uint64_t ranks, Wait how) {
    return "\"rank\":" + std::to_string(rank) + ",\"ranks\":" + std::to_string(ranks) + ",\"net_wait\":\"" +
           (how == Wait::kernel ? "kernel" : "spin") +
           "\",\"net_wait_s\":" + std::to_string(static_cast<double>(wait_ns().load()) * 1e-9) +
           ",\"messages\":" + std::to_string(messages().load());
}

// Paths travel to the ranks' EDTs as parameters: 32 words (255 bytes and a NUL).
inline constexpr std::size_t path_words = 32;
inline void pack_path(const std::string& path, u64* words) {
    if (path.size() >= path_words * sizeof(u64)) {
        std::fprintf(stderr, "umt: path '%s': over %zu bytes\n", path.c_str(), path_words * sizeof(u64) - 1);
        std::exit(2);
    }
    std::memset(words, 0, path_words * sizeof(u64));
    std::memcpy(words, path.data(), path.size());
}
inline std::string unpack_path(const u64* words) {
    return {reinterpret_cast<const char*>(words),
            ::strnlen(reinterpret_cast<const char*>(words), path_words * sizeof(u64))};
}

// The rank of a file: each rank keeps its snapshots or checkpoints in a file of its own, as in the paper.
inline std::string rank_file(const std::string& path, std::uint64_t rank, std::uint64_t ranks) {
    return ranks == 1 ? path : path + ".rank" + std::to_string(rank);
}

// The hint of the communication tasks: they start before any ready compute
// task, so that a transfer is in flight (and, with the monitor, its wait
// covered) while the rest of the step computes, instead of being left for
// when nothing else is ready.
inline ocrHint_t* communication_hint(ocrHint_t* hint) {
    ocrHintInit(hint, OCR_HINT_EDT_T);
    ocrSetHintValue(hint, OCR_HINT_EDT_PRIORITY, 1);
    return hint;
}

// mainEdt's part: runs `rank_edt` (a FINISH EDT) on every rank with `params`
// and the rank appended as the last parameter; once all ended, shuts down.
inline ocrGuid_t all_ranks_done(u32, u64*, u32, ocrEdtDep_t*) {
    ocrShutdown();
    return NULL_GUID;
}
inline void start_ranks(ocrEdt_t rank_edt, std::vector<u64> params) {
    const std::uint64_t ranks = rank_count();
    ocrGuid_t done_template, rank_template, done;
    ocrEdtTemplateCreate(&done_template, all_ranks_done, 0, static_cast<u32>(ranks));
    ocrEdtCreate(&done, done_template, 0, nullptr, static_cast<u32>(ranks), nullptr, EDT_PROP_NONE, NULL_HINT, nullptr);
    params.push_back(0);
    ocrEdtTemplateCreate(&rank_template, rank_edt, static_cast<u32>(params.size()), 1);
    for (std::uint64_t r = 0; r < ranks; ++r) {
        params.back() = r;
        ocrGuid_t affinity, edt, finished;
        ocrAffinityGetAt(AFFINITY_PD, r, &affinity);
        ocrHint_t hint;
        ocrHintInit(&hint, OCR_HINT_EDT_T);
        ocrSetHintValue(&hint, OCR_HINT_EDT_AFFINITY, ocrAffinityToHintValue(affinity));
        ocrEdtCreate(&edt, rank_template, static_cast<u32>(params.size()), params.data(), 1, nullptr, EDT_PROP_FINISH,
                     &hint, &finished);
        // Its output event gets its dependence before the EDT may run (a ONCE
        // event satisfied before anything depends on it would be lost).
        ocrAddDependence(finished, done, static_cast<u32>(r), DB_MODE_RO);
        ocrAddDependence(NULL_GUID, edt, 0, DB_MODE_RO);
    }
}

}  // namespace umt::net
