// SPDX-License-Identifier: MIT
// Handles travel between MPI ranks as STRATA_MPI_HANDLE: rank 0 makes vectors
// in a segment and sends their handles (point to point and broadcast); the
// other ranks load them in place and check every element; a forged handle is
// refused. Run with mpiexec -n 3; exits non-zero on any mismatch.
#include <cstdio>
#include <cstdlib>
#include <numeric>
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

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size >= 2);
    int type_size = 0;
    MPI_Type_size(STRATA_MPI_HANDLE, &type_size);
    CHECK(type_size == static_cast<int>(sizeof(strata::Handle)));

    // One name per job: rank 0's pid, broadcast.
    int job = static_cast<int>(::getpid());
    MPI_Bcast(&job, 1, MPI_INT, 0, MPI_COMM_WORLD);
    const std::string name = fmt::format("mpi-handle-test-{}", job);
    const char* dir_env = std::getenv("STRATA_SHM_DIR");
    const strata::SegmentOptions options{.dir = dir_env != nullptr ? dir_env : "/dev/shm"};

    std::optional<strata::Segment> seg;
    if (g_rank == 0) {
        auto s = strata::Segment::open(name, strata::SegmentMode::create_only, 16U << 20U, options);
        CHECK(s.has_value());
        seg.emplace(std::move(*s));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (g_rank != 0) {
        auto s = strata::Segment::open(name, strata::SegmentMode::open_only, 0, options);
        CHECK(s.has_value());
        seg.emplace(std::move(*s));
    }

    // Point to point: a vector per receiving rank.
    if (g_rank == 0) {
        for (int r = 1; r < size; ++r) {
            auto v = seg->make<strata::vector<double>>(std::size_t{1000}, static_cast<double>(r));
            CHECK(v.has_value());
            auto h = seg->save(**v);
            CHECK(h.has_value());
            MPI_Send(&*h, 1, STRATA_MPI_HANDLE, r, 7, MPI_COMM_WORLD);
        }
    } else {
        strata::Handle h;
        MPI_Recv(&h, 1, STRATA_MPI_HANDLE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        auto v = seg->load<strata::vector<double>>(h);
        CHECK(v.has_value());
        CHECK((*v)->size() == 1000U);
        CHECK(std::accumulate((*v)->begin(), (*v)->end(), 0.0) == 1000.0 * g_rank);
        auto wrong = seg->load<strata::vector<float>>(h);
        CHECK(!wrong.has_value() && wrong.error().code == strata::Errc::invalid_argument);
    }

    // Broadcast: two handles at once, as a C strata_handle array.
    strata_handle pair[2] = {};
    if (g_rank == 0) {
        auto a = seg->simple<int>("a", 11);
        auto b = seg->container<strata::string>("b", "shared by handle");
        CHECK(a.has_value() && b.has_value());
        auto ha = seg->save(**a);
        auto hb = seg->save(**b);
        CHECK(ha.has_value() && hb.has_value());
        std::memcpy(&pair[0], &*ha, sizeof pair[0]);
        std::memcpy(&pair[1], &*hb, sizeof pair[1]);
    }
    MPI_Bcast(pair, 2, STRATA_MPI_HANDLE, 0, MPI_COMM_WORLD);
    strata::Handle ha;
    strata::Handle hb;
    std::memcpy(&ha, &pair[0], sizeof ha);
    std::memcpy(&hb, &pair[1], sizeof hb);
    auto a = seg->load<int>(ha);
    auto b = seg->load<strata::string>(hb);
    CHECK(a.has_value() && **a == 11);
    CHECK(b.has_value() && std::string((*b)->c_str()) == "shared by handle");

    MPI_Barrier(MPI_COMM_WORLD);
    seg.reset();
    MPI_Barrier(MPI_COMM_WORLD);
    if (g_rank == 0) {
        CHECK(!std::filesystem::exists(options.dir / fmt::format("strata.{}.seg", name)));
        std::printf("handles travelled as STRATA_MPI_HANDLE to %d ranks; the segment is gone\n", size - 1);
    }
    MPI_Finalize();
    return 0;
}
