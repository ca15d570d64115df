// SPDX-License-Identifier: MIT
// Access kernels, timing and statistics shared by the benchmark's sections.
//
// Every pattern touches every page of the range exactly once per run, a whole
// 4 KiB page at a time (512 eight-byte loads or stores). Sequential visits the
// pages in address order; random visits them in one fixed shuffled order, so
// both move the same bytes and differ only in locality (TLB misses, no
// cross-page prefetch).
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace strata::bench {

enum class Pattern { seq_read, seq_write, rand_read, rand_write };
inline constexpr std::array<Pattern, 4> all_patterns{Pattern::seq_read, Pattern::seq_write, Pattern::rand_read,
                                                     Pattern::rand_write};
std::string_view to_string(Pattern pattern) noexcept;

/// Median, minimum and maximum of the samples (kept too, for the JSON).
struct Summary {
    double median = 0;
    double min = 0;
    double max = 0;
    std::vector<double> samples;
};
Summary summarize(std::vector<double> samples);
void to_json(nlohmann::json& j, const Summary& s);

/// Seconds taken by fn().
template <class F>
double time_seconds(F&& fn) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// Minor + major page faults of this process so far (getrusage).
std::uint64_t page_faults();

/// The page visiting orders of a range of `pages` pages.
struct PageOrders {
    std::vector<std::uint32_t> sequential;
    std::vector<std::uint32_t> shuffled;  ///< a fixed permutation (seeded), same for every kind
};
PageOrders make_page_orders(std::size_t pages);

/// Loads every word of the listed pages; the sum keeps the loads alive.
std::uint64_t read_pages(const std::byte* base, std::size_t page_size, std::span<const std::uint32_t> order);
/// Stores `value` into every word of the listed pages.
void write_pages(std::byte* base, std::size_t page_size, std::span<const std::uint32_t> order, std::uint64_t value);
/// Runs `pattern` once over the pages of `base`; returns seconds.
double run_pattern(Pattern pattern, std::byte* base, std::size_t page_size, const PageOrders& orders,
                   std::uint64_t value);

/// Keeps results of read kernels observable so they are not optimised away.
void consume(std::uint64_t value) noexcept;

}  // namespace strata::bench
