// SPDX-License-Identifier: MIT
// Names of the region enums and their parsers, shared by the CLI, the MPI
// hints and the Python bindings so every layer spells them the same way.
#include <charconv>
#include <cmath>

#include "strata/region.hpp"

namespace strata {

std::string_view to_string(RegionKind kind) noexcept {
    switch (kind) {
        case RegionKind::memory: return "memory";
        case RegionKind::shared: return "shared";
        case RegionKind::storage: return "storage";
        case RegionKind::combined: return "combined";
    }
    return "unknown";
}

std::string_view to_string(Tier tier) noexcept {
    switch (tier) {
        case Tier::memory: return "memory";
        case Tier::shared: return "shared";
        case Tier::storage: return "storage";
    }
    return "unknown";
}

std::string_view to_string(Order order) noexcept {
    return order == Order::memory_first ? "memory_first" : "storage_first";
}

std::string_view to_string(Writeback writeback) noexcept {
    switch (writeback) {
        case Writeback::kernel: return "kernel";
        case Writeback::explicit_sync: return "explicit_sync";
        case Writeback::direct: return "direct";
    }
    return "unknown";
}

std::string_view to_string(Advice advice) noexcept {
    switch (advice) {
        case Advice::normal: return "normal";
        case Advice::sequential: return "sequential";
        case Advice::random: return "random";
        case Advice::read_mostly: return "read_mostly";
        case Advice::write_mostly: return "write_mostly";
    }
    return "unknown";
}

Result<Order> parse_order(std::string_view text, std::string_view param) {
    if (text == "memory_first") {
        return Order::memory_first;
    }
    if (text == "storage_first") {
        return Order::storage_first;
    }
    return make_error(Errc::invalid_argument, "{}={}: unknown order (expected memory_first or storage_first)", param,
                      text);
}

Result<Writeback> parse_writeback(std::string_view text, std::string_view param) {
    if (text == "kernel") {
        return Writeback::kernel;
    }
    if (text == "explicit_sync") {
        return Writeback::explicit_sync;
    }
    if (text == "direct") {
        return Writeback::direct;
    }
    return make_error(Errc::invalid_argument, "{}={}: unknown write-back (expected kernel, explicit_sync or direct)",
                      param, text);
}

Result<Advice> parse_advice(std::string_view text, std::string_view param) {
    for (auto advice :
         {Advice::normal, Advice::sequential, Advice::random, Advice::read_mostly, Advice::write_mostly}) {
        if (text == to_string(advice)) {
            return advice;
        }
    }
    return make_error(Errc::invalid_argument,
                      "{}={}: unknown advice (expected normal, sequential, random, read_mostly or write_mostly)", param,
                      text);
}

Result<Factor> Factor::parse(std::string_view text, std::string_view param) {
    if (text == "auto") {
        return Factor::automatic();
    }
    double value = 0.0;
    const auto* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, value);
    if (text.empty() || ec != std::errc{} || ptr != end) {
        return make_error(Errc::invalid_argument, "{}={}: not a number in [0, 1] nor 'auto'", param, text);
    }
    if (!std::isfinite(value) || value < 0.0 || value > 1.0) {
        return make_error(Errc::invalid_argument, "{}={}: outside [0, 1]", param, text);
    }
    return Factor::fixed(value);
}

}  // namespace strata
