// SPDX-License-Identifier: MIT
// Ports with sync=mpi: the data stays in the segment's slots, waiting and
// waking go through zero-byte MPI messages. Rank 0 sends N messages 1->1 to
// rank 1 and 1->2 (fan-out) to ranks 1 and 2 through 4-slot ports, so the
// producer keeps waiting for released slots (backpressure) and the consumers
// for messages; every byte is checked and every message counted. Also: the
// errors before MPI_Init, for mixed syncs, and a bounded wait that times out.
// Run with mpiexec -n 3; exits non-zero on any mismatch.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "strata/mpi.h"
#include "strata/shm.hpp"

namespace {

int g_rank = -1;

#define CHECK(cond)                                                                                        \
    do {                                                                                                   \
        if (!(cond)) {                                                                                     \
            std::fprintf(stderr, "rank %d: %s:%d: CHECK(%s) failed\n", g_rank, __FILE__, __LINE__, #cond); \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                                  \
        }                                                                                                  \
    } while (false)

#define CHECK_OK(result)                                                                                               \
    do {                                                                                                               \
        if (!(result)) {                                                                                               \
            std::fprintf(stderr, "rank %d: %s:%d: %s\n", g_rank, __FILE__, __LINE__, (result).error().what().c_str()); \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                                              \
        }                                                                                                              \
    } while (false)

constexpr unsigned kMessages = 3000;
constexpr std::size_t kSlotBytes = 4096;

std::size_t used_of(unsigned i) {
    return 1 + (i * 37U) % kSlotBytes;
}
std::byte byte_of(unsigned i, std::size_t k) {
    return static_cast<std::byte>((i * 31U + k * 7U) & 0xFFU);
}

bool mentions(const strata::Error& e, std::string_view text) {
    return e.message.find(text) != std::string::npos;
}

// Rank 0 produces kMessages; each consumer checks sequence, size and bytes.
void stream(strata::Segment& seg, const std::string& port, unsigned consumers, bool consume) {
    const strata::PortOptions options{
        .slots = 4, .slot_bytes = kSlotBytes, .consumers = consumers, .sync = strata::PortSync::mpi};
    if (g_rank == 0) {
        auto out = seg.port(port, strata::PortRole::producer, options);
        CHECK_OK(out);
        CHECK(out->sync() == strata::PortSync::mpi);
        for (unsigned i = 0; i < kMessages; ++i) {
            auto loan = out->loan(std::chrono::seconds(30));
            CHECK_OK(loan);
            CHECK(loan->sequence() == i);
            for (std::size_t k = 0; k < used_of(i); ++k) {
                loan->bytes()[k] = byte_of(i, k);
            }
            CHECK_OK(out->commit(std::move(*loan), used_of(i)));
        }
        CHECK(out->messages() == kMessages);
        CHECK_OK(out->close());
    } else if (consume) {
        auto in = seg.port(port, strata::PortRole::consumer, options);
        CHECK_OK(in);
        for (unsigned i = 0; i < kMessages; ++i) {
            auto sample = in->recv(std::chrono::seconds(30));
            CHECK_OK(sample);
            CHECK(sample->sequence() == i);
            CHECK(sample->bytes().size() == used_of(i));
            for (std::size_t k = 0; k < used_of(i); ++k) {
                CHECK(sample->bytes()[k] == byte_of(i, k));
            }
            CHECK_OK(in->release(std::move(*sample)));
        }
        auto end = in->recv(std::chrono::seconds(30));
        CHECK(!end && end.error().code == strata::Errc::not_found);
        CHECK(in->messages() == kMessages);
    }
}

}  // namespace

int main(int argc, char** argv) {
    const char* dir_env = std::getenv("STRATA_SHM_DIR");
    const strata::SegmentOptions options{.dir = dir_env != nullptr ? dir_env : "/dev/shm"};

    // Before MPI_Init: sync=mpi names the cause and leaves no port behind.
    {
        auto early = strata::Segment::open(fmt::format("mpi-port-early-{}", ::getpid()),
                                           strata::SegmentMode::create_only, 1U << 20U, options);
        if (!early) {
            std::fprintf(stderr, "%s\n", early.error().what().c_str());
            return 1;
        }
        auto p = early->port("p", strata::PortRole::producer, {.sync = strata::PortSync::mpi});
        if (p || p.error().code != strata::Errc::invalid_argument || !mentions(p.error(), "sync=mpi") ||
            !mentions(p.error(), "not initialized") || strata_mpi_port_sync_ready() != 0) {
            std::fprintf(stderr, "sync=mpi before MPI_Init: expected invalid_argument naming the cause\n");
            return 1;
        }
        auto q = early->port("p", strata::PortRole::producer, {.sync = strata::PortSync::blocking});
        if (!q) {
            std::fprintf(stderr, "the refused port left something behind: %s\n", q.error().what().c_str());
            return 1;
        }
    }

    MPI_Init(&argc, &argv);
    int size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size >= 3);
    CHECK(strata_mpi_port_sync_ready() == 1);

    int job = static_cast<int>(::getpid());
    MPI_Bcast(&job, 1, MPI_INT, 0, MPI_COMM_WORLD);
    const std::string name = fmt::format("mpi-port-test-{}", job);
    std::optional<strata::Segment> seg;
    if (g_rank == 0) {
        auto s = strata::Segment::open(name, strata::SegmentMode::create_only, 16U << 20U, options);
        CHECK_OK(s);
        seg.emplace(std::move(*s));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (g_rank != 0) {
        auto s = strata::Segment::open(name, strata::SegmentMode::open_only, 0, options);
        CHECK_OK(s);
        seg.emplace(std::move(*s));
    }

    // Mixed syncs are refused, naming both.
    if (g_rank == 0) {
        auto shm_port = seg->port("by-segment", strata::PortRole::producer, {.sync = strata::PortSync::blocking});
        CHECK_OK(shm_port);
        auto mixed = seg->port("by-segment", strata::PortRole::consumer, {.sync = strata::PortSync::mpi});
        CHECK(!mixed && mixed.error().code == strata::Errc::invalid_argument);
        CHECK(mentions(mixed.error(), "sync=mpi") && mentions(mixed.error(), "blocking"));
        auto mpi_port = seg->port("by-mpi", strata::PortRole::producer, {.sync = strata::PortSync::mpi});
        CHECK_OK(mpi_port);
        auto mixed2 = seg->port("by-mpi", strata::PortRole::consumer, {.sync = strata::PortSync::busy_poll});
        CHECK(!mixed2 && mixed2.error().code == strata::Errc::invalid_argument);
        CHECK(mentions(mixed2.error(), "sync=busy_poll") && mentions(mixed2.error(), "sync=mpi"));
    }

    // A bounded wait with nothing to receive times out instead of hanging.
    if (g_rank == 1) {
        auto idle = seg->port("idle", strata::PortRole::consumer, {.sync = strata::PortSync::mpi});
        CHECK_OK(idle);
        auto nothing = idle->recv(std::chrono::milliseconds(50));
        CHECK(!nothing && nothing.error().code == strata::Errc::timeout);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    const double t0 = MPI_Wtime();
    stream(*seg, "one-to-one", 1, g_rank == 1);
    MPI_Barrier(MPI_COMM_WORLD);
    const double t1 = MPI_Wtime();
    stream(*seg, "fan-out", 2, g_rank == 1 || g_rank == 2);
    MPI_Barrier(MPI_COMM_WORLD);
    const double t2 = MPI_Wtime();
    // Waking by message, not by the 20 ms liveness tick: thousands of waits
    // on ticks alone would take a minute.
    CHECK(t1 - t0 < 10.0 && t2 - t1 < 10.0);

    seg.reset();
    MPI_Barrier(MPI_COMM_WORLD);
    if (g_rank == 0) {
        CHECK(!std::filesystem::exists(options.dir / fmt::format("strata.{}.seg", name)));
        std::printf("sync=mpi: %u messages 1->1 in %.3f s, 1->2 in %.3f s; every byte checked; the segment is gone\n",
                    kMessages, t1 - t0, t2 - t1);
    }
    MPI_Finalize();
    return 0;
}
