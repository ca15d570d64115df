// SPDX-License-Identifier: MIT
// What producers write and consumers check, plus the clock.
#include <ctime>

#include "ports.hpp"

namespace strata::workflow::detail {

namespace {

// splitmix64: a different 64-bit seed per (producer, iteration).
std::uint64_t seed_of(int task, std::uint64_t it) noexcept {
    std::uint64_t z = (static_cast<std::uint64_t>(task) << 40) ^ it ^ 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

}  // namespace

std::int64_t now_ns() noexcept {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void fill(std::span<std::uint64_t> words, int task, std::uint64_t it) noexcept {
    const std::uint64_t seed = seed_of(task, it);
    std::uint64_t* w = words.data();
    const std::size_t n = words.size();
    for (std::size_t i = 0; i < n; ++i) {
        w[i] = seed + i;
    }
}

std::uint64_t word_sum(std::span<const std::uint64_t> words) noexcept {
    const std::uint64_t* w = words.data();
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i < words.size(); ++i) {
        sum += w[i];
    }
    return sum;
}

std::uint64_t expected_sum(std::size_t words, int task, std::uint64_t it) noexcept {
    // The sum of seed + i over n words, in closed form; a stale iteration or a
    // torn buffer changes it (arithmetic is modulo 2^64 on both sides).
    const std::uint64_t n = words;
    const std::uint64_t half = n % 2 == 0 ? (n / 2) * (n - 1) : n * ((n - 1) / 2);
    return n * seed_of(task, it) + half;
}

bool verify(std::span<const std::uint64_t> words, int task, std::uint64_t it) noexcept {
    return word_sum(words) == expected_sum(words.size(), task, it);
}

}  // namespace strata::workflow::detail
