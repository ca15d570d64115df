// SPDX-License-Identifier: MIT
// Method mpi cuts a message into pieces no MPI call's int count can overflow
// (src/workflow/mpi_pieces.hpp): pieces cover the message exactly, in order,
// each within the limit, for messages of 2 GiB, 16 GiB (2^31 words, where an
// int count wraps negative) and more.
#include <climits>
#include <cstddef>

#include <gtest/gtest.h>

#include "workflow/mpi_pieces.hpp"

namespace strata::workflow::detail {
namespace {

void expect_exact_cover(std::size_t words, std::size_t max_words) {
    const auto pieces = message_pieces(words, max_words);
    const std::size_t limit = std::min<std::size_t>(max_words, INT_MAX);
    std::size_t next = 0;
    for (const auto& p : pieces) {
        EXPECT_EQ(p.offset, next) << words << " words";
        EXPECT_GE(p.count, 1);
        EXPECT_LE(static_cast<std::size_t>(p.count), limit);
        next += static_cast<std::size_t>(p.count);
    }
    EXPECT_EQ(next, words);
    EXPECT_EQ(pieces.size(), (words + limit - 1) / limit);
}

TEST(WorkflowMpiPieces, a_message_of_2_to_the_31_words_or_more_is_cut_into_counts_an_int_holds) {
    const std::size_t words = (std::size_t{1} << 31) + 5;  // 16 GiB + 40 bytes
    const auto pieces = message_pieces(words, std::size_t{1} << 40);
    ASSERT_EQ(pieces.size(), 2U);
    EXPECT_EQ(pieces[0].offset, 0U);
    EXPECT_EQ(pieces[0].count, INT_MAX);
    EXPECT_EQ(pieces[1].offset, static_cast<std::size_t>(INT_MAX));
    EXPECT_EQ(pieces[1].count, 6);
}

TEST(WorkflowMpiPieces, by_default_no_piece_carries_more_than_1_GiB) {
    const std::size_t two_and_a_half_gib = (std::size_t{5} << 30) / 2 / 8 + 1;  // data + the stamp word
    const auto pieces = message_pieces(two_and_a_half_gib);
    ASSERT_EQ(pieces.size(), 3U);
    EXPECT_EQ(pieces[0].count, 1 << 27);
    EXPECT_EQ(pieces[1].count, 1 << 27);
    EXPECT_EQ(pieces[2].offset, std::size_t{2} << 27);
    EXPECT_EQ(pieces[2].count, static_cast<int>(two_and_a_half_gib - (std::size_t{2} << 27)));
}

TEST(WorkflowMpiPieces, pieces_cover_every_size_exactly_in_order) {
    for (std::size_t words : {std::size_t{1}, std::size_t{2}, kMaxPieceWords - 1, kMaxPieceWords, kMaxPieceWords + 1,
                              3 * kMaxPieceWords, std::size_t{1} << 34, (std::size_t{1} << 40) + 12345}) {
        expect_exact_cover(words, kMaxPieceWords);
        expect_exact_cover(words, INT_MAX);
        expect_exact_cover(words, std::size_t{1} << 62);
    }
    expect_exact_cover(1000, 7);
    EXPECT_TRUE(message_pieces(0).empty());
}

}  // namespace
}  // namespace strata::workflow::detail
