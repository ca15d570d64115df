// SPDX-License-Identifier: MIT
// The pipeline's 3x3 edge kernel (apps/video/kernel.hpp): the vectorised version against the
// scalar one on random frames of sizes around the vector width, and both against values worked
// out by hand (the Laplacian stencil, clamping, the replicated border).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "kernel.hpp"

namespace {

using strata::video::edge_filter;
using strata::video::edge_filter_passes;
using strata::video::edge_filter_scalar;
using Frame = std::vector<std::uint8_t>;

Frame filtered(const Frame& in, int w, int h, bool vector) {
    Frame out(in.size(), 0xAB);
    if (vector) {
        edge_filter(in, out, w, h);
    } else {
        edge_filter_scalar(in, out, w, h);
    }
    return out;
}

TEST(VideoKernel, vectorised_kernel_equals_the_scalar_one_on_random_frames_of_many_sizes) {
    std::mt19937 random(7);
    for (auto [w, h] : std::vector<std::pair<int, int>>{{1, 1},
                                                        {2, 2},
                                                        {3, 1},
                                                        {1, 5},
                                                        {15, 7},
                                                        {16, 3},
                                                        {17, 5},
                                                        {18, 18},
                                                        {31, 2},
                                                        {33, 9},
                                                        {64, 64},
                                                        {1920, 4},
                                                        {1921, 3}}) {
        Frame in(static_cast<std::size_t>(w) * static_cast<std::size_t>(h));
        for (auto& p : in) p = static_cast<std::uint8_t>(random());
        EXPECT_EQ(filtered(in, w, h, true), filtered(in, w, h, false)) << w << "x" << h;
    }
}

TEST(VideoKernel, a_flat_frame_gives_zero_everywhere_including_the_border) {
    for (bool vector : {true, false}) {
        const Frame in(40 * 6, 200);
        EXPECT_EQ(filtered(in, 40, 6, vector), Frame(40 * 6, 0));
    }
}

TEST(VideoKernel, a_dark_pixel_on_a_bright_ground_lights_its_eight_neighbours) {
    // 8*100 - (7*100 + 0) = 100 around the dark pixel; at it 8*0 - 8*100 clamps to 0.
    const int w = 40;
    const int h = 7;
    for (bool vector : {true, false}) {
        Frame in(static_cast<std::size_t>(w * h), 100);
        in[3 * w + 20] = 0;
        const Frame out = filtered(in, w, h, vector);
        for (int y = 0; y < h; ++y) {
            for (int x = 0; x < w; ++x) {
                const bool neighbour = std::abs(y - 3) <= 1 && std::abs(x - 20) <= 1 && !(y == 3 && x == 20);
                EXPECT_EQ(out[static_cast<std::size_t>(y * w + x)], neighbour ? 100 : 0) << x << "," << y;
            }
        }
    }
}

TEST(VideoKernel, the_border_takes_the_nearest_pixel_and_results_clamp_at_255) {
    // Column 0 is 255, the rest 0. At x=0 the replicated column makes the left neighbours 255:
    // 8*255 - (3*255 + 2*255) = 765 clamps to 255; at x=1: 0 - 3*255 clamps to 0.
    const int w = 33;
    const int h = 4;
    for (bool vector : {true, false}) {
        Frame in(static_cast<std::size_t>(w * h), 0);
        for (int y = 0; y < h; ++y) in[static_cast<std::size_t>(y * w)] = 255;
        const Frame out = filtered(in, w, h, vector);
        for (int y = 0; y < h; ++y) {
            EXPECT_EQ(out[static_cast<std::size_t>(y * w)], 255);
            EXPECT_EQ(out[static_cast<std::size_t>(y * w + 1)], 0);
            EXPECT_EQ(out[static_cast<std::size_t>(y * w + w - 1)], 0);
        }
    }
}

TEST(VideoKernel, passes_apply_the_filter_again_to_each_output_for_odd_and_even_counts) {
    const int w = 37;
    const int h = 9;
    std::mt19937 random(11);
    Frame in(static_cast<std::size_t>(w * h));
    for (auto& p : in) p = static_cast<std::uint8_t>(random());
    for (bool vector : {true, false}) {
        Frame expected = in;
        Frame scratch;
        for (int passes = 1; passes <= 4; ++passes) {
            expected = filtered(expected, w, h, vector);
            Frame out(in.size(), 0xCD);
            edge_filter_passes(in, out, w, h, !vector, passes, scratch);
            EXPECT_EQ(out, expected) << passes << " passes, " << (vector ? "vector" : "scalar");
        }
    }
}

}  // namespace
