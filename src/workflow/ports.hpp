// SPDX-License-Identifier: MIT
// The two ends of an edge as a task sees them, one implementation per method.
//
// Per iteration a task calls post() on every input, then receive()/release()
// on each, then buffer() and publish() on its output. receive() returns the
// producer's words and the time the producer handed them over.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "strata/error.hpp"

namespace strata::workflow::detail {

/// CLOCK_MONOTONIC in nanoseconds (the same clock in every process of the node).
std::int64_t now_ns() noexcept;

class InputPort {
public:
    virtual ~InputPort() = default;
    /// Starts receiving iteration `it` (MPI posts its receive here so no send waits on an unposted one).
    virtual Result<void> post(std::uint64_t /*it*/) { return {}; }
    /// Waits for iteration `it`; `stamp_ns` is when the producer handed it over.
    virtual Result<std::span<const std::uint64_t>> receive(std::uint64_t it, std::int64_t& stamp_ns) = 0;
    /// The consumer is done reading iteration `it`.
    virtual Result<void> release(std::uint64_t /*it*/) { return {}; }
};

class OutputPort {
public:
    virtual ~OutputPort() = default;
    /// Where the task writes iteration `it` (waits until every consumer released the buffer).
    virtual Result<std::span<std::uint64_t>> buffer(std::uint64_t it) = 0;
    /// Hands iteration `it` to every consumer.
    virtual Result<void> publish(std::uint64_t it) = 0;
};

/// Hands one message (the data words, then the stamp) to a producer's consumers on other nodes: by MPI
/// (mpi_ports.hpp) or through the DSM (dsm_ports.hpp).
class Sender {
public:
    virtual ~Sender() = default;
    /// Returns once `message` may be rewritten.
    virtual Result<void> send(std::span<const std::uint64_t> message) = 0;
};

/// Fills `words` with the data of producer `task` at iteration `it`.
void fill(std::span<std::uint64_t> words, int task, std::uint64_t it) noexcept;
/// True when `words` hold exactly what fill(words, task, it) wrote (checks the sum of every word).
bool verify(std::span<const std::uint64_t> words, int task, std::uint64_t it) noexcept;
/// The sum of the words modulo 2^64, and what it is for fill(words, task, it).
std::uint64_t word_sum(std::span<const std::uint64_t> words) noexcept;
std::uint64_t expected_sum(std::size_t words, int task, std::uint64_t it) noexcept;

/// EdgeReport::digest: folds one iteration's word sum into an edge's digest (FNV-1a over sums).
inline constexpr std::uint64_t kDigestStart = 0xcbf29ce484222325ULL;
inline constexpr std::uint64_t fold_digest(std::uint64_t digest, std::uint64_t sum) noexcept {
    return (digest ^ sum) * 0x100000001b3ULL;
}

}  // namespace strata::workflow::detail
