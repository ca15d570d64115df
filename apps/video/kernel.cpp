// SPDX-License-Identifier: MIT
// The 3×3 edge filter (kernel.hpp). The vectorised version works on 16
// pixels at a time in 16-bit lanes (the sum of 8 neighbours, at most 2040,
// fits), with the border columns done by the scalar code.
#include "kernel.hpp"

#include <algorithm>
#include <cstring>

namespace strata::video {

namespace {

using Bytes16 = std::uint8_t __attribute__((vector_size(16)));
using Lanes16 = std::int16_t __attribute__((vector_size(32)));

constexpr int lanes = 16;

int pixel(const std::uint8_t* row, int x, int width) {
    return row[std::clamp(x, 0, width - 1)];
}

std::uint8_t scalar_at(const std::uint8_t* up, const std::uint8_t* mid, const std::uint8_t* down, int x, int width) {
    int sum = 0;
    for (const std::uint8_t* row : {up, mid, down}) {
        sum += pixel(row, x - 1, width) + pixel(row, x, width) + pixel(row, x + 1, width);
    }
    const int value = 9 * mid[x] - sum;
    return static_cast<std::uint8_t>(std::clamp(value, 0, 255));
}

Bytes16 bytes_at(const std::uint8_t* p) {
    Bytes16 bytes;
    std::memcpy(&bytes, p, sizeof bytes);
    return bytes;
}

// One row; target_clones picks the AVX2 body at load time when the CPU has it.
__attribute__((target_clones("avx2", "default"))) void filter_row(const std::uint8_t* up, const std::uint8_t* mid,
                                                                  const std::uint8_t* down, std::uint8_t* out,
                                                                  int width) {
    int x = 1;
    for (; x + lanes <= width - 1; x += lanes) {
        // Widened to 16 bits in place: a function returning a 32-byte vector would change the ABI.
#define STRATA_LANES(p) __builtin_convertvector(bytes_at(p), Lanes16)
        const Lanes16 sum = STRATA_LANES(up + x - 1) + STRATA_LANES(up + x) + STRATA_LANES(up + x + 1) +
                            STRATA_LANES(mid + x - 1) + STRATA_LANES(mid + x + 1) + STRATA_LANES(down + x - 1) +
                            STRATA_LANES(down + x) + STRATA_LANES(down + x + 1);
        Lanes16 value = STRATA_LANES(mid + x) * 8 - sum;
#undef STRATA_LANES
        value = value < 0 ? Lanes16{} : value;
        value = value > 255 ? Lanes16{} + 255 : value;
        const Bytes16 bytes = __builtin_convertvector(value, Bytes16);
        std::memcpy(out + x, &bytes, sizeof bytes);
    }
    for (; x < width - 1; ++x) {
        out[x] = scalar_at(up, mid, down, x, width);
    }
    out[0] = scalar_at(up, mid, down, 0, width);
    if (width > 1) {
        out[width - 1] = scalar_at(up, mid, down, width - 1, width);
    }
}

}  // namespace

void edge_filter(std::span<const std::uint8_t> in, std::span<std::uint8_t> out, int width, int height) {
    const auto w = static_cast<std::size_t>(width);
    for (int y = 0; y < height; ++y) {
        const std::uint8_t* mid = in.data() + static_cast<std::size_t>(y) * w;
        const std::uint8_t* up = in.data() + static_cast<std::size_t>(std::max(y - 1, 0)) * w;
        const std::uint8_t* down = in.data() + static_cast<std::size_t>(std::min(y + 1, height - 1)) * w;
        filter_row(up, mid, down, out.data() + static_cast<std::size_t>(y) * w, width);
    }
}

void edge_filter_scalar(std::span<const std::uint8_t> in, std::span<std::uint8_t> out, int width, int height) {
    const auto w = static_cast<std::size_t>(width);
    for (int y = 0; y < height; ++y) {
        const std::uint8_t* mid = in.data() + static_cast<std::size_t>(y) * w;
        const std::uint8_t* up = in.data() + static_cast<std::size_t>(std::max(y - 1, 0)) * w;
        const std::uint8_t* down = in.data() + static_cast<std::size_t>(std::min(y + 1, height - 1)) * w;
        for (int x = 0; x < width; ++x) {
            out[static_cast<std::size_t>(y) * w + static_cast<std::size_t>(x)] = scalar_at(up, mid, down, x, width);
        }
    }
}

void edge_filter_passes(std::span<const std::uint8_t> in, std::span<std::uint8_t> out, int width, int height,
                        bool scalar, int passes, std::vector<std::uint8_t>& scratch) {
    const auto filter = scalar ? edge_filter_scalar : edge_filter;
    if (passes > 1) {
        scratch.resize(out.size());
    }
    // A filter's input and output must not overlap: the passes alternate between `out` and
    // `scratch`, starting where the last pass ends in `out` (no copy at the end).
    for (int pass = 0; pass < passes; ++pass) {
        const bool into_out = (passes - 1 - pass) % 2 == 0;
        const std::span<std::uint8_t> dest = into_out ? out : std::span<std::uint8_t>(scratch);
        const std::span<const std::uint8_t> src =
            pass == 0 ? in : (into_out ? std::span<const std::uint8_t>(scratch) : std::span<const std::uint8_t>(out));
        filter(src, dest, width, height);
    }
}

}  // namespace strata::video
