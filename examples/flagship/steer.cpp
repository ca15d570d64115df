// SPDX-License-Identifier: MIT
// The flagship's steering job (docs/getting-started/flagship.md): global statistics and a
// steering parameter shared across nodes through strata's DSM.
//
//   mpiexec -hosts n0:2,n1:1 -n 3 flagship_steer <segment> <steps> <threshold>
//
// Rank 0 serves the DSM's two chunks. Client 0, the bridge, runs on the node of the heat
// program's rank 0: it is the second consumer of the port "frames" of <segment> (made by
// analysis.py), computes each frame's global statistics from the frame's pages (no copy) and
// writes them to the chunk "stats". Client 1, the console, on the other node, is told of each
// release of "stats" (publish-subscribe), reads them and decides alpha for the steps up to the
// next frame: 0.25 once the peak temperature is below <threshold>, else 0.2; it writes the
// decision to the chunk "steer". The bridge, told of that release, reads it and sends it back
// to the frame EDT through the port "steer", which it makes. The heat program is OCR over its
// own MPI job, so the DSM cannot live inside it: this job is its companion.
// Prints "steer: ready" once both clients wait, a line per decision, each rank's DSM traffic
// and "steer: rank R exit N" at the end. Exit 0; 1 on an error (a dead heat program
// included), 2 on bad arguments.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <fmt/format.h>
#include <mpi.h>
#include <strata/launcher.h>
#include <strata/dsm.hpp>
#include <strata/shm.hpp>

#include "frames.h"

namespace {

using strata::dsm::ChunkId;
using strata::dsm::Node;

struct Stats {
    std::uint64_t frame = 0;
    std::uint64_t step = 0;
    double max = 0, total = 0;
    std::uint64_t wants_answer = 0;  // 0 for the last frame (no step follows it)
    std::uint64_t stop = 0;          // the stream ended (1) or failed (2)
};

template <class R>
bool ok(const R& result, const char* what) {
    if (result) return true;
    fmt::print(stderr, "steer: {}: {}\n", what, result.error().what());
    return false;
}

// Writes `bytes` to `chunk` (acquire_write .. release: the release publishes them).
template <class T>
bool publish(Node& node, ChunkId chunk, const T& value) {
    auto bytes = node.acquire_write(chunk);
    if (!ok(bytes, "acquire_write")) return false;
    std::memcpy(bytes->data(), &value, sizeof value);
    return ok(node.release(chunk), "release");
}

// Waits for the next release of `chunk` by the other client and reads it.
template <class T>
bool next(Node& node, ChunkId chunk, T& value) {
    for (;;) {
        auto told = node.wait_notification(std::chrono::milliseconds(1000));
        if (!told && told.error().code == strata::Errc::timeout) continue;  // frames come when the job runs
        if (!ok(told, "wait_notification")) return false;
        if (told->chunk != chunk) continue;
        auto bytes = node.acquire_read(chunk);
        if (!ok(bytes, "acquire_read")) return false;
        std::memcpy(&value, bytes->data(), sizeof value);
        return ok(node.release(chunk), "release");
    }
}

// Each frame of the port: its statistics out, the console's answer back. 0 at the end of the
// stream, 1 on an error (a dead heat program: peer_dead).
int relay(Node& node, ChunkId stats, ChunkId steer, strata::Port& frames, strata::Port& answers, std::uint64_t steps) {
    for (std::uint64_t f = 0;; ++f) {
        auto frame = frames.recv<strata::vector<double>>();
        if (!frame) {
            return frame.error().code == strata::Errc::not_found ? 0 : (ok(frame, "receive from port frames"), 1);
        }
        const strata::vector<double>& v = *frame->object;
        Stats s{.frame = f, .step = static_cast<std::uint64_t>(v[0])};
        s.max = v[2];
        for (std::size_t i = 2; i < v.size(); ++i) {
            s.max = v[i] > s.max ? v[i] : s.max;
            s.total += v[i];
        }
        s.wants_answer = s.step < steps ? 1 : 0;
        if (!publish(node, stats, s)) return 1;
        if (s.wants_answer == 0) continue;
        flagship_steer_message answer{};
        if (!next(node, steer, answer)) return 1;
        auto loan = answers.loan();
        if (!ok(loan, "loan of port steer")) return 1;
        std::memcpy(loan->bytes().data(), &answer, sizeof answer);
        if (!ok(answers.commit(std::move(*loan), sizeof answer), "send to port steer")) return 1;
    }
}

int bridge(Node& node, ChunkId stats, ChunkId steer, const std::string& segment, std::uint64_t steps) {
    auto seg = strata::Segment::open(segment, strata::SegmentMode::open_only);
    auto answers = seg ? seg->port("steer", strata::PortRole::producer,
                                   {.slots = 2, .slot_bytes = sizeof(flagship_steer_message), .consumers = 1})
                       : std::unexpected(seg.error());
    auto frames = seg ? seg->port("frames", strata::PortRole::consumer) : std::unexpected(seg.error());
    const bool opened = ok(seg, "open the frames segment (start analysis.py first)") && ok(answers, "port steer") &&
                        ok(frames, "port frames");
    if (!ok(node.barrier(), "barrier")) return 1;  // the console waits there for the bridge
    int code = 1;
    if (opened) {
        std::printf("steer: ready\n");
        std::fflush(stdout);
        code = relay(node, stats, steer, *frames, *answers, steps);
    }
    // Whatever happened, the console stops: 1 at the end of the stream, 2 after an error.
    publish(node, stats, Stats{.stop = code == 0 ? 1U : 2U});
    return code;
}

int console(Node& node, ChunkId stats, ChunkId steer, double threshold) {
    if (!ok(node.barrier(), "barrier")) return 1;
    for (;;) {
        Stats s;
        if (!next(node, stats, s)) return 1;
        if (s.stop != 0) return s.stop == 1 ? 0 : 1;
        const double alpha = s.max < threshold ? 0.25 : 0.2;
        std::printf("steer: on %s: frame %llu, step %llu: max %.6f, total %.6f%s%.2f\n",
                    std::getenv("STRATA_NODE") != nullptr ? std::getenv("STRATA_NODE") : "here",
                    static_cast<unsigned long long>(s.frame), static_cast<unsigned long long>(s.step), s.max, s.total,
                    s.wants_answer != 0 ? " -> alpha " : " (last frame) alpha ", alpha);
        std::fflush(stdout);
        if (s.wants_answer != 0 && !publish(node, steer, flagship_steer_message{s.frame, alpha})) return 1;
    }
}

// One rank's part; the Node leaves the DSM when it goes, before MPI ends.
int run(const std::string& segment, std::uint64_t steps, double threshold) {
    auto node = Node::join(MPI_COMM_WORLD, {.servers = 1});
    if (!ok(node, "join")) return 1;
    if (node->is_server()) {
        const int code = ok(node->serve(), "serve") ? 0 : 1;
        const auto sent = node->traffic().total_sent();
        std::printf("steer: server: dsm_bytes_sent=%llu dsm_messages_sent=%llu\n",
                    static_cast<unsigned long long>(sent.bytes), static_cast<unsigned long long>(sent.messages));
        return code;
    }
    ChunkId ids[2] = {0, 0};
    if (node->client_index() == 0) {
        ids[0] = node->allocate(sizeof(Stats)).value_or(0);
        ids[1] = node->allocate(sizeof(flagship_steer_message)).value_or(0);
    }
    MPI_Bcast(ids, 2, MPI_UINT64_T, 0, node->clients_comm());
    if (ids[0] == 0 || ids[1] == 0 || !ok(node->subscribe(ids[0]), "subscribe") ||
        !ok(node->subscribe(ids[1]), "subscribe")) {
        return 1;
    }
    int code = node->client_index() == 0 ? bridge(*node, ids[0], ids[1], segment, steps)
                                         : console(*node, ids[0], ids[1], threshold);
    const auto sent = node->traffic().total_sent();
    std::printf("steer: client %d: dsm_bytes_sent=%llu dsm_messages_sent=%llu\n", node->client_index(),
                static_cast<unsigned long long>(sent.bytes), static_cast<unsigned long long>(sent.messages));
    std::fflush(stdout);
    if (!ok(node->leave(), "leave")) code = 1;  // also after an error: the server then ends at once
    return code;
}

}  // namespace

int main(int argc, char** argv) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    char* end = nullptr;
    const std::uint64_t steps = argc == 4 ? std::strtoull(argv[2], &end, 10) : 0;
    const double threshold = argc == 4 ? std::strtod(argv[3], nullptr) : 0;
    int code = 2;
    if (argc != 4 || steps == 0 || *end != '\0') {
        fmt::print(stderr, "usage: flagship_steer <segment> <steps> <threshold> (3 ranks)\n");
    } else {
        code = run(argv[1], steps, threshold);
        MPI_Barrier(MPI_COMM_WORLD);  // every rank's work is done
    }
    // No MPI_Finalize: MPICH 4.0.2's ch4:ucx finalize can deadlock across nodes (each rank
    // disconnects its endpoints, then waits in a PMI barrier; MPICH PR #6596). Every rank exits
    // past the barrier above after telling Hydra its end is deliberate (strata/launcher.h).
    // Each rank also says its own code, which flagship.py reads.
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    std::printf("steer: rank %d exit %d\n", rank, code);
    std::fflush(nullptr);
    (void)strata_launcher_finalize(2000);
    std::_Exit(code);
}
