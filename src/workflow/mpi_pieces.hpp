// SPDX-License-Identifier: MIT
// Method mpi: how a message of any size goes through MPI calls whose count
// is an int. A message is cut into pieces of at most kMaxPieceWords 64-bit
// words (1 GiB), each sent and received with its own call, in order, with
// the same tag (MPI keeps messages between two ranks with one tag in order).
// So no count is ever narrowed, and no single call carries 2 GiB or more,
// which some MPI transports still handle badly. Both sides cut the same way
// from the data size they both know.
#pragma once

#include <algorithm>
#include <climits>
#include <cstddef>
#include <vector>

namespace strata::workflow::detail {

/// 2^27 words: 1 GiB per MPI call.
inline constexpr std::size_t kMaxPieceWords = std::size_t{1} << 27;

struct MessagePiece {
    std::size_t offset = 0;  ///< in words from the start of the message
    int count = 0;           ///< words in this piece, 1 .. min(max_words, INT_MAX)
};

/// The pieces of a message of `words` words, in order, covering it exactly;
/// none for an empty message. `max_words` above INT_MAX counts as INT_MAX.
inline std::vector<MessagePiece> message_pieces(std::size_t words, std::size_t max_words = kMaxPieceWords) {
    const std::size_t limit = std::clamp<std::size_t>(max_words, 1, INT_MAX);
    std::vector<MessagePiece> pieces;
    pieces.reserve(words / limit + 1);
    for (std::size_t offset = 0; offset < words; offset += limit) {
        pieces.push_back({offset, static_cast<int>(std::min(limit, words - offset))});
    }
    return pieces;
}

}  // namespace strata::workflow::detail
