// SPDX-License-Identifier: MIT
// Method mpi: the producer's private buffer goes to each consumer with
// MPI_Isend; the consumer receives into its own buffer (the serialized-data
// baseline of the paper). The last word of each message is the send time.
// Messages of any size travel in pieces of at most 1 GiB (mpi_pieces.hpp).
// Producers use MpiSender through remote_outputs.hpp.
#pragma once

#include <mpi.h>

#include "mpi_pieces.hpp"
#include "ports.hpp"

namespace strata::workflow::detail {

/// Sends one message (data words + the stamp) to every consumer rank, each with its edge's tag.
class MpiSender final : public Sender {
public:
    MpiSender(std::size_t message_words, std::vector<int> consumer_ranks, std::vector<int> tags);
    /// Sends `message` to every consumer and waits until the sends are done (the buffer is reused after).
    Result<void> send(std::span<const std::uint64_t> message) override;

private:
    std::vector<MessagePiece> pieces_;
    std::vector<int> ranks_;
    std::vector<int> tags_;
    std::vector<MPI_Request> requests_;  // per consumer, its pieces
};

class MpiInput final : public InputPort {
public:
    MpiInput(std::size_t words, int producer_rank, int tag);
    Result<void> post(std::uint64_t it) override;
    Result<std::span<const std::uint64_t>> receive(std::uint64_t it, std::int64_t& stamp_ns) override;

private:
    std::vector<std::uint64_t> message_;
    std::vector<MessagePiece> pieces_;
    std::vector<MPI_Request> requests_;
    int rank_;
    int tag_;
};

}  // namespace strata::workflow::detail
