// SPDX-License-Identifier: MIT
// What the processes of a kill round share (shm_kill_rounds.hpp): an
// anonymous shared mapping made before the fork, so it outlives the victim
// and holds nothing the port under test holds.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "integration/shm_kill_rounds.hpp"

namespace strata::test::kills {

inline constexpr unsigned kMaxProducers = 2;
inline constexpr unsigned kMaxConsumers = 2;
/// Numbers a producer sends per round (from 1); it idles once there.
inline constexpr std::uint64_t kMaxMessages = 1U << 16U;

/// What one child reports.
struct ChildReport {
    std::atomic<int> joined{0};
    std::atomic<int> told{0};              ///< its first error is recorded
    std::atomic<std::int64_t> told_ns{0};  ///< CLOCK_MONOTONIC of it
    int first_code = 0;                    ///< an Errc
    char first_error[768] = {};
    int unexpected_code = 0;  ///< an error it could not go on after (then it exits 1)
    char unexpected[768] = {};
};

struct Control {
    std::atomic<int> go{0};
    std::atomic<int> stop{0};
    ChildReport producers[kMaxProducers];
    ChildReport consumers[kMaxConsumers];
    std::atomic<std::uint64_t> attempted[kMaxProducers] = {};  ///< the number about to be committed
    std::atomic<std::uint64_t> committed[kMaxProducers] = {};  ///< the last number whose commit returned
    std::atomic<std::uint32_t> out_of_order[kMaxConsumers] = {};
    std::atomic<std::uint32_t> phantom[kMaxConsumers] = {};  ///< payloads no producer wrote
    /// Times consumer c received number n of producer p (saturating at 255).
    std::uint8_t received[kMaxConsumers][kMaxProducers][kMaxMessages] = {};
};

/// The child bodies (shm_kill_children.cpp): exit codes, 0 when it ended by itself.
int run_producer(const Options& options, const Config& config, bool widen, unsigned index, Control& control);
int run_consumer(const Options& options, const Config& config, bool widen, unsigned index, Control& control);

/// The port each config uses.
std::string port_name(const Config& config);

std::int64_t monotonic_ns();

}  // namespace strata::test::kills
