// SPDX-License-Identifier: MIT
// Rounds of SIGKILL at random moments against ports in use: the engine of
// the port-healing test (shm_port_heal_random_test.cpp, a few hundred rounds)
// and of the long-run report (bench/shm-kills, 2,000 rounds).
//
// One round: producers and consumers (child processes) join one port of the
// shape under test; at a signal the producers send numbered messages and
// record each number in shared memory just before commit ("attempted") and
// just after it returns ("committed"); consumers count every (producer,
// number) they receive. After a random delay one of them, a producer or a
// consumer, is SIGKILLed. The survivors go on until each has had its error,
// then end their stream. The round passes when
//   - no survivor saw `broken`, and each survivor's first error is peer_dead
//     naming the victim's pid;
//   - every surviving consumer received every committed message exactly once
//     and in order, the victim's one in-flight message (attempted, commit not
//     returned) at most once and by all or none of them, nothing else;
//   - every survivor ended by itself (no hang).
// With `widen`, the children pause inside the port's critical sections (the
// crash points of strata/shm/testing.hpp), so more kills land while the
// victim holds the port's lock; without it, the points are where the code
// puts them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "strata/shm/port.hpp"

namespace strata::test::kills {

/// One shape of port and use under test.
struct Config {
    unsigned producers = 1;  ///< 1 or 2
    unsigned consumers = 1;  ///< 1 or 2
    unsigned slots = 1;
    PortSync sync = PortSync::blocking;

    [[nodiscard]] std::string name() const;  ///< "2p1c-4slots-busy_poll"
};

/// Producers 1|2 x consumers 1|2 x slots 1|4 x blocking|busy_poll.
std::vector<Config> all_configs();

/// What one round did and found.
struct Round {
    int index = 0;
    Config config;
    bool widen = false;
    std::string victim;  ///< "producer 1", "consumer 0"
    int victim_pid = 0;
    long delay_us = 0;                 ///< from the start signal to the kill
    bool in_lock = false;              ///< a survivor's error says the victim held the port's lock
    std::string repaired;              ///< the repair the error names ("loan of message 17 undone"), if any
    std::uint64_t committed = 0;       ///< messages whose commit returned
    std::uint64_t delivered = 0;       ///< messages received, summed over the surviving consumers
    unsigned in_flight_delivered = 0;  ///< the victim's in-flight message, delivered to every survivor
    unsigned lost = 0;                 ///< committed, not received by a surviving consumer
    unsigned duplicated = 0;           ///< received more than once
    unsigned out_of_order = 0;
    unsigned phantom = 0;  ///< received, never attempted (or an in-flight one only some received)
    unsigned survivors = 0;
    unsigned named = 0;          ///< survivors whose first error is peer_dead naming the victim
    bool broken = false;         ///< a survivor saw Errc::broken
    double first_error_ms = -1;  ///< from the kill to the first survivor's error
    double last_error_ms = -1;   ///< ... to the last survivor's
    std::string failure;         ///< empty when the round passed
};

struct Options {
    std::filesystem::path dir;  ///< the segment directory
    std::string segment;        ///< its name (the caller holds it open, create_only)
    int rounds = 256;
    std::uint64_t seed = 1;
    long max_delay_us = 10'000;  ///< kills come uniformly in [0, this) after the start
    /// Called after each round (progress, early stop): false ends the run.
    std::function<bool(const Round&)> on_round;
};

/// Runs the rounds; round i uses config (i / 4) % 16, kills a producer when
/// i is even (else a consumer) and widens when (i / 2) is odd.
std::vector<Round> run_rounds(const Options& options);

/// Opens every port the rounds used as a producer (Segment::port fails on a
/// broken port) and closes it; an empty string, or what failed.
std::string check_ports_usable(const Options& options);

}  // namespace strata::test::kills
