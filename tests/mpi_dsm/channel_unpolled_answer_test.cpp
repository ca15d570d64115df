// SPDX-License-Identifier: MIT
// A peer whose message waits in MPI, not yet taken by this rank's poll(), is
// alive: only the checking rank is late (src/net/mpi_channel.hpp, check_alive).
//
// A DSM server takes one message per turn of its loop and checks its clients
// between turns; behind on its queue, it must not declare dead a client whose
// answer is already there. Rank 1 sends one message to rank 0 and then makes
// no MPI call; rank 0 checks rank 1 for three timeouts without polling: rank 1
// must stay alive throughout (before, it was declared dead one timeout after
// the first ping). Then rank 0 takes the message and checks on without rank 1
// answering: rank 1 must be found dead, within a hang bound, so that a message
// once taken keeps nobody alive.
#include <mpi.h>

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

enum Kind : unsigned char { ping = 0, news, kinds };
constexpr auto kTimeout = 300ms;
constexpr auto kHeartbeat = 50ms;
constexpr auto kBehind = 3 * kTimeout;  // rank 0 checks this long without polling
constexpr auto kGiveUp = 30s;           // a hang bound for the dead peer to be found

// Rank 1's message, visible to MPI at rank 0 (bounded: it was sent before the barrier's end).
bool wait_for_message(const MpiChannel& ch) {
    const auto until = std::chrono::steady_clock::now() + kGiveUp;
    while (std::chrono::steady_clock::now() < until) {
        int waiting = 0;
        MPI_Iprobe(1, 1, ch.comm(), &waiting, MPI_STATUS_IGNORE);
        if (waiting != 0) {
            return true;
        }
        std::this_thread::sleep_for(1ms);
    }
    return false;
}

void rank0(MpiChannel& ch) {
    check(wait_for_message(ch), "rank 1's message never reached rank 0");
    bool alive = true;
    const auto until = std::chrono::steady_clock::now() + kBehind;
    while (alive && std::chrono::steady_clock::now() < until) {
        alive = ch.check_alive(1, kHeartbeat, kTimeout);
        std::this_thread::sleep_for(1ms);
    }
    check(alive, "rank 1, whose message waited unpolled at rank 0, was declared dead");
    Received in;
    bool taken = false;
    bool found = false;
    const auto give_up = std::chrono::steady_clock::now() + kGiveUp;
    while (!found && std::chrono::steady_clock::now() < give_up) {
        auto got = ch.poll(in);
        taken = taken || (got && *got && in.source == 1);
        found = !ch.check_alive(1, kHeartbeat, kTimeout);
        std::this_thread::sleep_for(1ms);
    }
    check(taken, "rank 0 never received rank 1's message");
    check(found, "rank 1, answering nothing once its message was taken, was never declared dead");
}

}  // namespace

int main(int argc, char** argv) {
    const int rank = strata::test::channel::start(argc, argv, 2);
    if (rank < 0) {
        return 2;
    }
    auto channel = strata::test::channel::make(kinds, ping, "unpolled test", rank);
    MpiChannel& ch = *channel;
    if (rank == 1) {
        const std::byte b{news};
        check(ch.post(0, std::span<const std::byte>(&b, 1)).has_value(), "rank 1 could not post its message");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        rank0(ch);
    } else {
        // No MPI call (so no pong either) while rank 0 is behind and then looks for its death.
        std::this_thread::sleep_for(kBehind + 3 * kTimeout + 10 * kHeartbeat);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    const int all = strata::test::channel::verdict(rank);
    channel.reset();
    MPI_Finalize();
    return all == 0 ? 0 : 1;
}
