// SPDX-License-Identifier: MIT
// The DSM's event log (Options::event_log) against the transport's own counters.
//
//   mpiexec -n 3 dsm_event_log_test <dir> full|small|exists
//
// 1 server, 2 clients, each rank logging to <dir>/events-<rank>.txt. Client 0
// allocates a chunk and writes it 20 times; client 1, subscribed with update on
// write, gets each version pushed and reads it.
//   full:   every rank's file holds one line per event, its first line says
//           "N events, 0 dropped", and for every message kind but the channel's
//           ping and pong the lines sent and received equal traffic()'s counts
//           (counted by the MPI channel, not by the log); a second
//           write_event_log() writes nothing.
//   small:  event_log_capacity 4: 4 lines, and the dropped count is the rest.
//   exists: rank 0's file exists before join: join fails on every rank, rank 0
//           naming the file, and the file is left as it was.
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "dsm_test.hpp"

namespace {

struct Counted {
    std::map<std::string, std::uint64_t> sent, received;
    std::uint64_t lines = 0;
    std::string first;
};

Counted read_log(const std::string& path) {
    std::ifstream in(path);
    DSM_CHECK(in.good());
    Counted c;
    std::string line;
    std::getline(in, c.first);
    std::getline(in, line);  // the columns
    while (std::getline(in, line)) {
        std::istringstream fields(line);
        std::string t, dir, kind;
        fields >> t >> dir >> kind;
        DSM_CHECK(dir == "sent" || dir == "recv");
        (dir == "sent" ? c.sent : c.received)[kind] += 1;
        ++c.lines;
    }
    return c;
}

void workload(strata::dsm::Node& node) {
    strata::dsm::ChunkId id = 0;
    if (node.client_index() == 0) {
        auto made = node.allocate(4096);
        DSM_CHECK_OK(made);
        id = *made;
    }
    MPI_Bcast(&id, 1, MPI_UINT64_T, 0, node.clients_comm());
    if (node.client_index() == 1) {  // the released bytes come forwarded by the home (its post_buffer)
        DSM_CHECK_OK(node.subscribe(id, {.update_on_write = true}));
    }
    DSM_CHECK_OK(node.barrier());
    for (std::uint64_t round = 1; round <= 20; ++round) {
        if (node.client_index() == 0) {
            auto bytes = node.acquire_write(id);
            DSM_CHECK_OK(bytes);
            std::memcpy(bytes->data(), &round, sizeof round);
            DSM_CHECK_OK(node.release(id));
        }
        DSM_CHECK_OK(node.barrier());
        if (node.client_index() == 1) {
            auto note = node.wait_notification(std::chrono::seconds(30));
            DSM_CHECK_OK(note);
            std::uint64_t pushed = 0;
            DSM_CHECK(note->has_data && note->data().size() >= sizeof pushed);
            std::memcpy(&pushed, note->data().data(), sizeof pushed);
            DSM_CHECK(pushed == round);
            auto bytes = node.acquire_read(id);
            DSM_CHECK_OK(bytes);
            std::uint64_t seen = 0;
            std::memcpy(&seen, bytes->data(), sizeof seen);
            DSM_CHECK(seen == round);
            DSM_CHECK_OK(node.release(id));
        }
        DSM_CHECK_OK(node.barrier());
    }
}

}  // namespace

int main(int argc, char** argv) {
    dsm_test::init(&argc, &argv);
    DSM_CHECK(argc == 3);
    const std::string dir = argv[1];
    const std::string mode = argv[2];
    const std::string mine = fmt::format("{}/events-{}.txt", dir, dsm_test::g_rank);
    strata::dsm::Options options{.servers = 1};
    options.event_log = dir + "/events-%r.txt";
    if (mode == "small") {
        options.event_log_capacity = 4;
    }
    if (mode == "exists") {
        if (dsm_test::g_rank == 0) {
            std::ofstream(mine) << "planted\n";
        }
        MPI_Barrier(MPI_COMM_WORLD);
        auto node = strata::dsm::Node::join(MPI_COMM_WORLD, options);
        DSM_CHECK(!node && node.error().code == strata::Errc::already_exists);
        if (dsm_test::g_rank == 0) {
            DSM_CHECK(node.error().what().find(mine) != std::string::npos);
            std::ifstream in(mine);
            std::string line;
            std::getline(in, line);
            DSM_CHECK(line == "planted");
        }
        MPI_Finalize();
        return 0;
    }
    auto node = strata::dsm::Node::join(MPI_COMM_WORLD, options);
    DSM_CHECK_OK(node);
    if (node->is_server()) {
        DSM_CHECK_OK(node->serve());
    } else {
        workload(*node);
        DSM_CHECK_OK(node->leave());
    }
    auto written = node->write_event_log();
    DSM_CHECK_OK(written);
    const auto traffic = node->traffic();
    const Counted log = read_log(mine);
    DSM_CHECK(log.lines == *written);
    if (mode == "small") {
        std::uint64_t all = 0;
        for (std::size_t k = 0; k < traffic.kinds.size(); ++k) {
            if (traffic.kinds[k] != "ping") {  // the channel's own pings are not recorded
                all += traffic.sent[k].messages;
            }
            all += traffic.received[k].messages;
        }
        // Every message this rank received and sent, but the pings the channel sends itself.
        DSM_CHECK(all > 4);
        DSM_CHECK(log.lines == 4);
        DSM_CHECK(log.first.find(fmt::format("4 events, {} dropped", all - 4)) != std::string::npos);
    } else {
        DSM_CHECK(log.first.find(fmt::format("{} events, 0 dropped", *written)) != std::string::npos);
        std::uint64_t protocol = 0;
        for (std::size_t k = 0; k < traffic.kinds.size(); ++k) {
            const std::string& kind = traffic.kinds[k];
            if (kind == "ping" || kind == "pong") {
                continue;
            }
            DSM_CHECK(log.sent.contains(kind) ? log.sent.at(kind) == traffic.sent[k].messages
                                              : traffic.sent[k].messages == 0);
            DSM_CHECK(log.received.contains(kind) ? log.received.at(kind) == traffic.received[k].messages
                                                  : traffic.received[k].messages == 0);
            protocol += traffic.sent[k].messages + traffic.received[k].messages;
        }
        DSM_CHECK(protocol >= 20);  // at least one message per round on every rank
        auto again = node->write_event_log();
        DSM_CHECK_OK(again);
        DSM_CHECK(*again == 0);
        DSM_CHECK(read_log(mine).lines == log.lines);
    }
    std::printf("rank %d: %llu events logged\n", dsm_test::g_rank, static_cast<unsigned long long>(*written));
    MPI_Finalize();
    return 0;
}
