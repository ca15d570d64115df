// SPDX-License-Identifier: MIT
// Where a release's bytes travel (Options::direct_data, docs/dsm.md "Direct data path").
//
//   mpiexec -n 4 dsm_data_path_test direct|relay on|off|split
//
// 1 server, 3 clients. Client 0 writes a 1 MiB chunk 12 times back to back
// (each release a new pattern; acquire_write and acquire_overwrite in turn,
// the former must see the last release); client 1 subscribes with
// update-on-write, client 2 without.
// Both subscribers must be told of every release once, in version order,
// client 1 with the released bytes, which it keeps to the end and checks there
// (on one node they are read in place, in the writer's buffers). Then client 2
// reads the chunk: it holds the last release (with the direct path the home's
// copy was older: the read recalls the writer's).
//   direct: the server received the versions only (its publish bytes are
//           headers), the writer sent every payload as notifies itself;
//   relay:  (direct_data off) every payload went to the server, which sent it on.
// The counts are the transport's own (traffic()), summed over the ranks: the
// bytes a rank handed over, through MPI or by reference.
// Same-node data (Options::node_sharing, docs/dsm.md "Same-node data"):
//   on:    all four ranks on one node: the 1 MiB payloads went by reference;
//   off:   not one byte went by reference;
//   split: the ranks on two nodes by $STRATA_NODE (0 and 2 on one, 1 and 3 on
//          the other): no data message crossing nodes went by reference.
#include <cstring>
#include <string>
#include <vector>

#include "dsm_test.hpp"

namespace {

constexpr std::size_t kBytes = std::size_t{1} << 20;
constexpr std::uint64_t kRounds = 12;

void fill(std::span<std::byte> b, std::uint64_t round) {
    for (std::size_t i = 0; i < b.size(); ++i) {
        b[i] = static_cast<std::byte>((round * 131 + i / 7) & 0xFFU);
    }
}

bool holds(std::span<const std::byte> b, std::uint64_t round) {
    if (b.size() != kBytes) {
        return false;
    }
    for (std::size_t i = 0; i < b.size(); ++i) {
        if (b[i] != static_cast<std::byte>((round * 131 + i / 7) & 0xFFU)) {
            return false;
        }
    }
    return true;
}

void clients(strata::dsm::Node& node) {
    const int me = node.client_index();
    strata::dsm::ChunkId id = 0;
    if (me == 0) {
        auto made = node.allocate(kBytes);
        DSM_CHECK_OK(made);
        id = *made;
    }
    MPI_Bcast(&id, 1, MPI_UINT64_T, 0, node.clients_comm());
    if (me > 0) {
        DSM_CHECK_OK(node.subscribe(id, {.update_on_write = me == 1}));
    }
    DSM_CHECK_OK(node.barrier());
    if (me == 0) {
        for (std::uint64_t round = 1; round <= kRounds; ++round) {
            // Back to back: the last release's sends are often still reading the chunk's buffer.
            // acquire_write must still see that release; acquire_overwrite may see anything;
            // neither may change what is being sent.
            const bool overwrite = round % 2 == 0;
            auto w = overwrite ? node.acquire_overwrite(id) : node.acquire_write(id);
            DSM_CHECK_OK(w);
            DSM_CHECK(overwrite || round == 1 || holds(*w, round - 1));
            fill(*w, round);
            DSM_CHECK_OK(node.release(id));
        }
    } else {
        // Kept to the end: a notification's bytes stay its version's while the writer goes on.
        std::vector<strata::dsm::Notification> kept;
        for (std::uint64_t round = 1; round <= kRounds; ++round) {
            auto note = node.wait_notification(std::chrono::seconds(30));
            DSM_CHECK_OK(note);
            DSM_CHECK(note->chunk == id && note->version == round);
            DSM_CHECK(note->has_data == (me == 1));
            kept.push_back(std::move(*note));
        }
        for (std::uint64_t round = 1; me == 1 && round <= kRounds; ++round) {
            DSM_CHECK(holds(kept[round - 1].data(), round));
        }
    }
    DSM_CHECK_OK(node.barrier());
    if (me == 2) {
        auto r = node.acquire_read(id);
        DSM_CHECK_OK(r);
        DSM_CHECK(holds(*r, kRounds));
        DSM_CHECK_OK(node.release(id));
    }
    DSM_CHECK_OK(node.barrier());
}

}  // namespace

int main(int argc, char** argv) {
    dsm_test::init(&argc, &argv);
    DSM_CHECK(argc == 3);
    const std::string mode = argv[1];
    const std::string sharing = argv[2];
    DSM_CHECK(mode == "direct" || mode == "relay");
    DSM_CHECK(sharing == "on" || sharing == "off" || sharing == "split");
    if (sharing == "split") {
        ::setenv("STRATA_NODE", dsm_test::g_rank % 2 == 0 ? "even" : "odd", 1);
    }
    auto node = strata::dsm::Node::join(
        MPI_COMM_WORLD, {.servers = 1, .direct_data = mode == "direct", .node_sharing = sharing != "off"});
    DSM_CHECK_OK(node);
    if (node->is_server()) {
        DSM_CHECK_OK(node->serve());
    } else {
        clients(*node);
        DSM_CHECK_OK(node->leave());
    }
    const auto t = node->traffic();
    // Per rank: [writer: publish bytes handed over] [server: notify bytes handed over]
    // [writer: notify bytes handed over] [any: bytes sent by reference].
    std::uint64_t mine[4] = {0, 0, 0, 0};
    if (node->is_server()) {
        mine[1] = dsm_test::traffic_of(t, "notify").bytes_handed_over();
    } else if (node->client_index() == 0) {
        mine[0] = dsm_test::traffic_of(t, "publish").bytes_handed_over();
        mine[2] = dsm_test::traffic_of(t, "notify").bytes_handed_over();
    }
    for (const auto& s : t.shared) {
        mine[3] += s.bytes;
    }
    std::uint64_t all[4] = {};
    MPI_Allreduce(mine, all, 4, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (dsm_test::g_rank == 0) {
        std::printf(
            "dsm_data_path_test %s %s: the writer published %llu bytes, the server notified %llu, the writer "
            "notified %llu; %llu bytes went by reference\n",
            mode.c_str(), sharing.c_str(), static_cast<unsigned long long>(all[0]),
            static_cast<unsigned long long>(all[1]), static_cast<unsigned long long>(all[2]),
            static_cast<unsigned long long>(all[3]));
        std::fflush(stdout);
    }
    const std::uint64_t payloads = kRounds * kBytes;
    if (mode == "direct") {
        DSM_CHECK(all[0] < kRounds * 1024);  // headers only
        DSM_CHECK(all[1] < kRounds * 1024);  // the data-less notifies of client 2
        DSM_CHECK(all[2] >= payloads);       // every payload, from the writer
    } else {
        DSM_CHECK(all[0] >= payloads);
        DSM_CHECK(all[1] >= payloads);
        DSM_CHECK(all[2] == 0);
    }
    if (sharing == "on") {
        DSM_CHECK(all[3] >= (mode == "direct" ? payloads : 2 * payloads));
    } else {
        // split, direct: the writer's payloads go to the other node's subscriber, the final
        // recall to the other node's server; relay: the writer's publishes cross too, and only the
        // server's notifies to client 1 (its own node) go by reference, headers included.
        if (sharing == "split" && mode == "relay") {
            DSM_CHECK(all[3] >= payloads && all[3] < payloads + kRounds * 1024);
        } else {
            DSM_CHECK(all[3] == 0);
        }
    }
    MPI_Finalize();
    return 0;
}
