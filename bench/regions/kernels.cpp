// SPDX-License-Identifier: MIT
#include "kernels.hpp"

#include <algorithm>
#include <numeric>
#include <random>

#include <sys/resource.h>
#include <nlohmann/json.hpp>

namespace strata::bench {
namespace {
volatile std::uint64_t g_sink = 0;
}

std::string_view to_string(Pattern pattern) noexcept {
    switch (pattern) {
        case Pattern::seq_read: return "seq_read";
        case Pattern::seq_write: return "seq_write";
        case Pattern::rand_read: return "rand_read";
        case Pattern::rand_write: return "rand_write";
    }
    return "?";
}

Summary summarize(std::vector<double> samples) {
    Summary s;
    s.samples = samples;
    if (samples.empty()) {
        return s;
    }
    std::sort(samples.begin(), samples.end());
    const std::size_t n = samples.size();
    s.min = samples.front();
    s.max = samples.back();
    s.median = n % 2 == 1 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
    return s;
}

void to_json(nlohmann::json& j, const Summary& s) {
    j = {{"median", s.median}, {"min", s.min}, {"max", s.max}, {"samples", s.samples}};
}

std::uint64_t page_faults() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<std::uint64_t>(usage.ru_minflt) + static_cast<std::uint64_t>(usage.ru_majflt);
}

PageOrders make_page_orders(std::size_t pages) {
    PageOrders orders;
    orders.sequential.resize(pages);
    std::iota(orders.sequential.begin(), orders.sequential.end(), std::uint32_t{0});
    orders.shuffled = orders.sequential;
    std::mt19937_64 rng(0x5157'7a7a'2024'0001ULL);  // fixed: every kind sees the same order
    std::shuffle(orders.shuffled.begin(), orders.shuffled.end(), rng);
    return orders;
}

std::uint64_t read_pages(const std::byte* base, std::size_t page_size, std::span<const std::uint32_t> order) {
    const std::size_t words = page_size / sizeof(std::uint64_t);
    // Four independent sums so the loads are not serialised by one add chain.
    std::uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (const std::uint32_t page : order) {
        const auto* p = reinterpret_cast<const std::uint64_t*>(base + std::size_t{page} * page_size);
        for (std::size_t i = 0; i < words; i += 4) {
            s0 += p[i];
            s1 += p[i + 1];
            s2 += p[i + 2];
            s3 += p[i + 3];
        }
    }
    return s0 + s1 + s2 + s3;
}

void write_pages(std::byte* base, std::size_t page_size, std::span<const std::uint32_t> order, std::uint64_t value) {
    const std::size_t words = page_size / sizeof(std::uint64_t);
    for (const std::uint32_t page : order) {
        auto* p = reinterpret_cast<std::uint64_t*>(base + std::size_t{page} * page_size);
        for (std::size_t i = 0; i < words; ++i) {
            p[i] = value;
        }
    }
}

double run_pattern(Pattern pattern, std::byte* base, std::size_t page_size, const PageOrders& orders,
                   std::uint64_t value) {
    const bool shuffled = pattern == Pattern::rand_read || pattern == Pattern::rand_write;
    const std::span<const std::uint32_t> order = shuffled ? orders.shuffled : orders.sequential;
    if (pattern == Pattern::seq_read || pattern == Pattern::rand_read) {
        std::uint64_t sum = 0;
        const double seconds = time_seconds([&] { sum = read_pages(base, page_size, order); });
        consume(sum);
        return seconds;
    }
    return time_seconds([&] { write_pages(base, page_size, order, value); });
}

void consume(std::uint64_t value) noexcept {
    g_sink = g_sink + value;
}

}  // namespace strata::bench
