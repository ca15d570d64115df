// SPDX-License-Identifier: MIT
#include "mpi_ports.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace strata::workflow::detail {

namespace {

Result<void> check(int rc, const std::string& what) {
    if (rc != MPI_SUCCESS) {
        char text[MPI_MAX_ERROR_STRING];
        int length = 0;
        MPI_Error_string(rc, text, &length);
        return make_error(Errc::io_error, "{}: {}", what, std::string(text, static_cast<std::size_t>(length)));
    }
    return {};
}

}  // namespace

MpiSender::MpiSender(std::size_t message_words, std::vector<int> consumer_ranks, std::vector<int> tags)
    : pieces_(message_pieces(message_words)),
      ranks_(std::move(consumer_ranks)),
      tags_(std::move(tags)),
      requests_(ranks_.size() * pieces_.size(), MPI_REQUEST_NULL) {}

Result<void> MpiSender::send(std::span<const std::uint64_t> message) {
    std::size_t r = 0;
    for (std::size_t i = 0; i < ranks_.size(); ++i) {
        for (const auto& piece : pieces_) {
            if (auto sent = check(MPI_Isend(message.data() + piece.offset, piece.count, MPI_UINT64_T, ranks_[i],
                                            tags_[i], MPI_COMM_WORLD, &requests_[r++]),
                                  fmt::format("MPI_Isend to rank {}", ranks_[i]));
                !sent) {
                return sent;
            }
        }
    }
    // The buffer is rewritten next iteration, so the sends must finish first.
    return check(MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE),
                 fmt::format("MPI_Waitall for the sends to ranks {}", fmt::join(ranks_, ",")));
}

MpiInput::MpiInput(std::size_t words, int producer_rank, int tag)
    : message_(words + 1, 0),
      pieces_(message_pieces(message_.size())),
      requests_(pieces_.size(), MPI_REQUEST_NULL),
      rank_(producer_rank),
      tag_(tag) {}

Result<void> MpiInput::post(std::uint64_t /*it*/) {
    for (std::size_t p = 0; p < pieces_.size(); ++p) {
        if (auto posted = check(MPI_Irecv(message_.data() + pieces_[p].offset, pieces_[p].count, MPI_UINT64_T, rank_,
                                          tag_, MPI_COMM_WORLD, &requests_[p]),
                                fmt::format("MPI_Irecv from rank {}", rank_));
            !posted) {
            return posted;
        }
    }
    return {};
}

Result<std::span<const std::uint64_t>> MpiInput::receive(std::uint64_t /*it*/, std::int64_t& stamp_ns) {
    if (auto r = check(MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE),
                       fmt::format("MPI_Waitall for the message from rank {}", rank_));
        !r) {
        return std::unexpected(r.error());
    }
    stamp_ns = static_cast<std::int64_t>(message_.back());
    return std::span<const std::uint64_t>(message_.data(), message_.size() - 1);
}

}  // namespace strata::workflow::detail
