// SPDX-License-Identifier: MIT
// A peer is dead once it leaves this rank's pings unanswered for the timeout,
// not once it has been quiet that long (src/net/mpi_channel.hpp, check_alive).
//
// Two ranks say nothing to each other for twice the timeout, as two DSM
// clients between barriers do. Then rank 0 checks rank 1 in a loop while rank
// 1 answers pings: rank 1 must stay alive throughout (the old check measured
// the silence from the last message and declared it dead at once: the video
// pipeline's healthy input "stopped answering" in leave()'s barrier). Then
// rank 1 stops answering (it sleeps without polling): rank 0 must find it
// dead, within a hang bound.
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "mpi_dsm/channel_test.hpp"
#include "net/mpi_channel.hpp"

namespace {

using namespace std::chrono_literals;
using strata::net::MpiChannel;
using strata::net::Received;
using strata::test::channel::check;

enum Kind : unsigned char { ping = 0, pong, kinds };
constexpr auto kTimeout = 300ms;
constexpr auto kHeartbeat = 50ms;
constexpr auto kChecking = 1500ms;  // rank 0 checks this long while rank 1 answers
constexpr auto kGiveUp = 30s;       // a hang bound for the dead peer to be found

// Takes every message waiting; answers pings.
void serve(MpiChannel& ch) {
    for (;;) {
        Received in;
        auto got = ch.poll(in);
        if (!got || !*got) {
            return;
        }
        if (static_cast<Kind>(in.buffer->front()) == ping) {
            const std::byte b{pong};
            (void)ch.post(in.source, std::span<const std::byte>(&b, 1));
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    const int rank = strata::test::channel::start(argc, argv, 2);
    if (rank < 0) {
        return 2;
    }
    auto channel = strata::test::channel::make(kinds, ping, "liveness test", rank);
    MpiChannel& ch = *channel;
    MPI_Barrier(MPI_COMM_WORLD);
    std::this_thread::sleep_for(2 * kTimeout);  // quiet: nothing goes either way
    if (rank == 0) {
        bool alive = true;
        const auto until = std::chrono::steady_clock::now() + kChecking;
        while (alive && std::chrono::steady_clock::now() < until) {
            alive = ch.check_alive(1, kHeartbeat, kTimeout);
            serve(ch);
            std::this_thread::sleep_for(1ms);
        }
        check(alive, "rank 1, quiet for twice the timeout and then answering pings, was declared dead");
        MPI_Barrier(MPI_COMM_WORLD);  // rank 1 stops answering now
        bool found = false;
        const auto give_up = std::chrono::steady_clock::now() + kGiveUp;
        while (!found && std::chrono::steady_clock::now() < give_up) {
            found = !ch.check_alive(1, kHeartbeat, kTimeout);
            serve(ch);
            std::this_thread::sleep_for(1ms);
        }
        check(found, "rank 1, answering nothing, was never declared dead");
    } else {
        const auto until = std::chrono::steady_clock::now() + kChecking;
        while (std::chrono::steady_clock::now() < until) {
            serve(ch);
            std::this_thread::sleep_for(1ms);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        // Answers nothing (no MPI call) while rank 0 looks for its death.
        std::this_thread::sleep_for(3 * kTimeout + 10 * kHeartbeat);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    const int all = strata::test::channel::verdict(rank);
    channel.reset();
    MPI_Finalize();
    return all == 0 ? 0 : 1;
}
