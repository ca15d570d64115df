// SPDX-License-Identifier: MIT
// strata's own MPI traffic never meets the application's (docs/dsm.md, docs/mpi-storage-windows.md):
// a thread of every rank sends to every other rank on every tag of a dense sample of
// [0, MPI_TAG_UB] (0..1023, each 2^k-1, 2^k, 2^k+1, MPI_TAG_UB) on MPI_COMM_WORLD and receives with
// MPI_ANY_SOURCE and MPI_ANY_TAG, while the main thread allocates a storage window on
// MPI_COMM_WORLD (libstrata-mpi's collective set-up), puts into it, syncs and frees it, streams
// 500 messages through a sync=mpi shm port (libstrata-mpi's wake-up messages), then runs
// libstrata-dsm (rank 0 serves, the others write and read chunks). Every message the application
// receives must be its own (magic, sender and tag as the status says, once each), and after a
// barrier nothing is left to probe on MPI_COMM_WORLD.
//
// --stray: rank 0 also sends one message of another kind on MPI_COMM_WORLD, as a leak of strata
// would: the program must then fail (the test that shows the check can fail).
//
// Run: mpiexec -n 4 strata_traffic_stays_apart_from_every_application_tag DIR [--stray]
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "../mpi_dsm/dsm_test.hpp"
#include "strata/shm.hpp"

namespace {

constexpr std::uint64_t kMagic = 0x4150504c49434154ULL;  // "APPLICAT"

struct Message {
    std::uint64_t magic;
    std::int32_t from;
    std::int32_t tag;
};

std::vector<int> tag_sample() {
    int* ub = nullptr;
    int found = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &found);
    DSM_CHECK(found != 0 && *ub >= 32767);  // MPI guarantees at least 32767
    std::set<int> tags;
    for (int t = 0; t < 1024; ++t) tags.insert(t);
    for (long long p = 1; p <= *ub; p *= 2) {
        for (long long t : {p - 1, p, p + 1}) {
            if (t >= 0 && t <= *ub) tags.insert(static_cast<int>(t));
        }
    }
    tags.insert(*ub);
    return {tags.begin(), tags.end()};
}

// The application's traffic: every tag to every other rank, every message received with wildcards.
void application(int rank, int size, const std::vector<int>& tags, std::string& failure) {
    std::vector<Message> out(tags.size());
    std::vector<MPI_Request> sends;
    for (std::size_t i = 0; i < tags.size(); ++i) out[i] = {kMagic, rank, tags[i]};
    for (int to = 0; to < size; ++to) {
        if (to == rank) continue;
        for (std::size_t i = 0; i < tags.size(); ++i) {
            sends.emplace_back();
            MPI_Isend(&out[i], sizeof(Message), MPI_BYTE, to, tags[i], MPI_COMM_WORLD, &sends.back());
        }
    }
    std::set<std::pair<int, int>> seen;
    const std::size_t expected = tags.size() * static_cast<std::size_t>(size - 1);
    for (std::size_t n = 0; n < expected && failure.empty(); ++n) {
        Message in{};
        MPI_Status status;
        MPI_Recv(&in, sizeof(Message), MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &status);
        int bytes = 0;
        MPI_Get_count(&status, MPI_BYTE, &bytes);
        if (bytes != static_cast<int>(sizeof(Message)) || in.magic != kMagic || in.from != status.MPI_SOURCE ||
            in.tag != status.MPI_TAG || !seen.emplace(in.from, in.tag).second) {
            failure = fmt::format(
                "rank {}: a message that is not the application's (or twice) reached it: {} bytes "
                "from rank {} with tag {} (magic {:#x}, says rank {} tag {})",
                rank, bytes, status.MPI_SOURCE, status.MPI_TAG, in.magic, in.from, in.tag);
        }
    }
    MPI_Waitall(static_cast<int>(sends.size()), sends.data(), MPI_STATUSES_IGNORE);
}

void storage_window(int rank, int size, const std::string& dir) {
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "alloc_type", "storage");
    MPI_Info_set(info, "storage_alloc_filename", (dir + "/tags-%r.dat").c_str());
    MPI_Info_set(info, "storage_alloc_unlink", "true");
    std::uint64_t* base = nullptr;
    MPI_Win win;
    DSM_CHECK(MPI_Win_allocate(4096, sizeof(std::uint64_t), info, MPI_COMM_WORLD, &base, &win) == MPI_SUCCESS);
    MPI_Info_free(&info);
    const std::uint64_t value = 1000 + static_cast<std::uint64_t>(rank);
    MPI_Win_lock_all(0, win);
    MPI_Put(&value, 1, MPI_UINT64_T, (rank + 1) % size, 0, 1, MPI_UINT64_T, win);
    MPI_Win_flush_all(win);
    MPI_Win_sync(win);
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    MPI_Win_sync(win);
    DSM_CHECK(base[0] == 1000 + static_cast<std::uint64_t>((rank + size - 1) % size));
    MPI_Win_unlock(rank, win);
    DSM_CHECK(MPI_Win_free(&win) == MPI_SUCCESS);
}

// libstrata-mpi's own point-to-point messages: a sync=mpi port from rank 0 to rank 1, whose
// waits and wake-ups are zero-byte messages on libstrata-mpi's duplicate of MPI_COMM_WORLD.
void mpi_port_stream(int rank, unsigned messages) {
    int job = static_cast<int>(::getpid());
    MPI_Bcast(&job, 1, MPI_INT, 0, MPI_COMM_WORLD);
    const std::string name = fmt::format("tags-port-{}", job);
    const strata::PortOptions options{.slots = 2, .slot_bytes = 64, .consumers = 1, .sync = strata::PortSync::mpi};
    std::optional<strata::Segment> seg;
    if (rank == 0) {
        auto s = strata::Segment::open(name, strata::SegmentMode::create_only, 1U << 20U);
        DSM_CHECK_OK(s);
        seg.emplace(std::move(*s));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        auto out = seg->port("p", strata::PortRole::producer, options);
        DSM_CHECK_OK(out);
        for (unsigned i = 0; i < messages; ++i) {
            auto loan = out->loan(std::chrono::seconds(30));
            DSM_CHECK_OK(loan);
            loan->bytes()[0] = static_cast<std::byte>(i & 0xFFU);
            DSM_CHECK_OK(out->commit(std::move(*loan), 1));
        }
        DSM_CHECK_OK(out->close());
    } else if (rank == 1) {
        auto s = strata::Segment::open(name, strata::SegmentMode::open_only, 0);
        DSM_CHECK_OK(s);
        seg.emplace(std::move(*s));
        auto in = seg->port("p", strata::PortRole::consumer, options);
        DSM_CHECK_OK(in);
        for (unsigned i = 0; i < messages; ++i) {
            auto sample = in->recv(std::chrono::seconds(30));
            DSM_CHECK_OK(sample);
            DSM_CHECK(sample->sequence() == i && sample->bytes()[0] == static_cast<std::byte>(i & 0xFFU));
            DSM_CHECK_OK(in->release(std::move(*sample)));
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    seg.reset();
    MPI_Barrier(MPI_COMM_WORLD);
}

void dsm_rounds(int rounds) {
    auto node = strata::dsm::Node::join(MPI_COMM_WORLD, {.servers = 1});
    DSM_CHECK_OK(node);
    if (node->is_server()) {
        DSM_CHECK_OK(node->serve());
        return;
    }
    const int me = node->client_index();
    const int clients = node->clients();
    auto mine = node->allocate(64);
    DSM_CHECK_OK(mine);
    std::vector<strata::dsm::ChunkId> ids(static_cast<std::size_t>(clients));
    MPI_Allgather(&*mine, 1, MPI_UINT64_T, ids.data(), 1, MPI_UINT64_T, node->clients_comm());
    for (int r = 1; r <= rounds; ++r) {
        auto w = node->acquire_write(*mine);
        DSM_CHECK_OK(w);
        const std::uint64_t v = static_cast<std::uint64_t>(me) * 1000000 + static_cast<std::uint64_t>(r);
        std::memcpy(w->data(), &v, sizeof v);
        DSM_CHECK_OK(node->release(*mine));
        DSM_CHECK_OK(node->barrier());
        for (int c = 0; c < clients; ++c) {
            auto got = node->acquire_read(ids[static_cast<std::size_t>(c)]);
            DSM_CHECK_OK(got);
            std::uint64_t read = 0;
            std::memcpy(&read, got->data(), sizeof read);
            DSM_CHECK(read == static_cast<std::uint64_t>(c) * 1000000 + static_cast<std::uint64_t>(r));
            DSM_CHECK_OK(node->release(ids[static_cast<std::size_t>(c)]));
        }
        DSM_CHECK_OK(node->barrier());
    }
    DSM_CHECK_OK(node->leave());
}

}  // namespace

int main(int argc, char** argv) {
    dsm_test::init(&argc, &argv);
    DSM_CHECK(argc >= 2);
    const std::string dir = argv[1];
    const bool stray = argc >= 3 && std::string(argv[2]) == "--stray";
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    DSM_CHECK(size >= 3);
    const std::vector<int> tags = tag_sample();
    std::string failure;
    std::thread app([&] { application(rank, size, tags, failure); });
    const Message other{0, -1, -1};  // what a leak of strata's own traffic would look like to the application
    MPI_Request stray_send = MPI_REQUEST_NULL;
    if (stray && rank == 0) MPI_Isend(&other, sizeof other, MPI_BYTE, 1, 7, MPI_COMM_WORLD, &stray_send);
    storage_window(rank, size, dir);
    mpi_port_stream(rank, 500);
    dsm_rounds(50);
    app.join();
    if (stray_send != MPI_REQUEST_NULL) MPI_Wait(&stray_send, MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    // The barrier does not order a message sent before it on another tag: a message on its way is
    // looked for a while, not by one probe (a single probe missed the --stray message once).
    int left = 0;
    MPI_Status status;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    for (;;) {
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &left, &status);
        if (left != 0 || std::chrono::steady_clock::now() > until) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (failure.empty() && left != 0) {
        failure = fmt::format("rank {}: a message from rank {} with tag {} is still waiting on MPI_COMM_WORLD", rank,
                              status.MPI_SOURCE, status.MPI_TAG);
    }
    if (!failure.empty()) {
        std::fprintf(stderr, "%s\n", failure.c_str());
        std::fflush(stderr);
        // Also in DIR, which the test prints: hydra may end the job on MPI_Abort before it has
        // forwarded this rank's stderr (seen once under load).
        if (std::FILE* f = std::fopen(fmt::format("{}/failure-{}.txt", dir, rank).c_str(), "wx")) {
            std::fprintf(f, "%s\n", failure.c_str());
            std::fclose(f);
        }
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0)
        std::printf("%zu tags x %d senders: every message was the application's own\n", tags.size(), size - 1);
    MPI_Finalize();
    return 0;
}
