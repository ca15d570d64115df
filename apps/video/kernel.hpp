// SPDX-License-Identifier: MIT
// The pipeline's compute kernel: a 3×3 edge-detection convolution on 8-bit
// grey frames (paper 003's processing task), shared by every implementation.
//
//   out(x, y) = clamp(8·in(x, y) − Σ in(x+i, y+j) over the 8 neighbours, 0, 255)
//
// i.e. the Laplacian kernel [[-1,-1,-1],[-1,8,-1],[-1,-1,-1]]; pixels beyond
// the border take the value of the nearest border pixel (scipy.ndimage's
// mode="nearest"), so the output has the input's size.
//
// Thread safety: pure functions of their arguments.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace strata::video {

/// The vectorised kernel (GCC vector extensions; AVX2 where the CPU has it).
/// `in` and `out` hold width·height bytes, rows packed; they must not overlap.
void edge_filter(std::span<const std::uint8_t> in, std::span<std::uint8_t> out, int width, int height);

/// The same result computed pixel by pixel: the reference the unit test holds the vectorised kernel to.
void edge_filter_scalar(std::span<const std::uint8_t> in, std::span<std::uint8_t> out, int width, int height);

/// The filter (vectorised, or `scalar`) applied `passes` times, each pass to the previous one's output:
/// a heavier kernel of the same shape (--kernel-passes), for platforms where the paper's boards spent
/// longer per frame than this machine does. `scratch` is resized as needed and reused between calls.
void edge_filter_passes(std::span<const std::uint8_t> in, std::span<std::uint8_t> out, int width, int height,
                        bool scalar, int passes, std::vector<std::uint8_t>& scratch);

}  // namespace strata::video
