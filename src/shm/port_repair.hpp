// SPDX-License-Identifier: MIT
// Repairing a port whose lock's holder died: the invariants P1-P7 and what
// each interrupted step leaves are listed in port_layout.hpp. Pure functions
// of the port's shared state, so unit tests can build every prefix by hand.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "shm/port_layout.hpp"

namespace strata::shm_detail {

/// What repair_port found and did.
struct PortRepair {
    std::vector<std::string> done;  ///< each repair, for the death report ("loan of message 17 undone")
    std::string fault;              ///< non-empty: a value no step of strata's leaves; the port is unusable
    bool freed = false;             ///< a slot became free: wake the producers
    bool published = false;         ///< a message became receivable: wake the consumers
};

/// With the port's lock taken over from a dead holder: checks P1-P3 and P5-P7
/// and restores what an interrupted critical section broke (P4, the dead
/// users' loans, is the recovery's: abandon_loans). Stops at the first fault.
PortRepair repair_port(PortShared& port);

/// Abandons the slots `loaner` holds loaned (each is skipped by the consumers
/// that were to receive it, or freed when there is none); their sequences.
std::vector<std::uint64_t> abandon_loans(PortShared& port, std::uint64_t loaner, bool* freed);

/// "17, 18" (the repairs or messages of a report), at most `limit` items then "…".
std::string list_text(const std::vector<std::string>& items, std::size_t limit = 4);

}  // namespace strata::shm_detail
