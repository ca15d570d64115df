// SPDX-License-Identifier: MIT
// Names of methods, waits and shapes, and the byte-count parser.
#include <array>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>

#include "strata/workflow.hpp"

namespace strata::workflow {

namespace {

constexpr std::array<std::pair<Method, std::string_view>, 7> kMethods{{
    {Method::shm, "shm"},
    {Method::copy_into, "copy-into"},
    {Method::copy_from, "copy-from"},
    {Method::copy, "copy"},
    {Method::mpi, "mpi"},
    {Method::threads, "threads"},
    {Method::dsm, "dsm"},
}};

constexpr std::array<std::pair<Shape, std::string_view>, 3> kShapes{{
    {Shape::simple, "simple"},
    {Shape::pipeline, "pipeline"},
    {Shape::scatter_gather, "scatter-gather"},
}};

}  // namespace

std::string_view to_string(Method method) noexcept {
    for (const auto& [m, name] : kMethods) {
        if (m == method) {
            return name;
        }
    }
    return "?";
}

Result<Method> parse_method(std::string_view text, std::string_view param) {
    for (const auto& [m, name] : kMethods) {
        if (name == text) {
            return m;
        }
    }
    return make_error(Errc::invalid_argument,
                      "{}={}: unknown method (expected shm, copy-into, copy-from, copy, mpi or threads)", param, text);
}

std::string_view to_string(Wait wait) noexcept {
    return wait == Wait::blocking ? "blocking" : "busy-poll";
}

Result<Wait> parse_wait(std::string_view text, std::string_view param) {
    if (text == "blocking") {
        return Wait::blocking;
    }
    if (text == "busy-poll") {
        return Wait::busy_poll;
    }
    return make_error(Errc::invalid_argument, "{}={}: unknown wait (expected blocking or busy-poll)", param, text);
}

std::string_view to_string(Shape shape) noexcept {
    for (const auto& [s, name] : kShapes) {
        if (s == shape) {
            return name;
        }
    }
    return "?";
}

Result<Shape> parse_shape(std::string_view text, std::string_view param) {
    for (const auto& [s, name] : kShapes) {
        if (name == text) {
            return s;
        }
    }
    return make_error(Errc::invalid_argument, "{}={}: unknown shape (expected simple, pipeline or scatter-gather)",
                      param, text);
}

Result<std::chrono::milliseconds> handoff_timeout_from_env() {
    const char* v = std::getenv("STRATA_WORKFLOW_TIMEOUT_MS");
    if (v == nullptr || *v == '\0') {
        return std::chrono::milliseconds(30'000);
    }
    const std::string_view text(v);
    std::int64_t ms = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), ms);
    if (ec != std::errc{} || end != text.data() + text.size() || ms < 1 || ms > 86'400'000) {
        return make_error(Errc::invalid_argument,
                          "STRATA_WORKFLOW_TIMEOUT_MS={}: expected a whole number of milliseconds from 1 to 86400000",
                          text);
    }
    return std::chrono::milliseconds(ms);
}

Result<std::size_t> parse_size(std::string_view text, std::string_view param) {
    double number = 0;
    const auto* begin = text.data();
    const auto* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(begin, end, number);
    if (ec != std::errc{} || text.empty() || text.front() == '-' || !std::isfinite(number)) {
        return make_error(Errc::invalid_argument,
                          "{}={}: not a byte count (expected a number with an optional unit B, KB, MB, GB, KiB, MiB, "
                          "GiB)",
                          param, text);
    }
    std::string unit(ptr, end);
    while (!unit.empty() && unit.front() == ' ') {
        unit.erase(0, 1);
    }
    constexpr std::array<std::pair<std::string_view, double>, 8> kUnits{{
        {"", 1.0},
        {"B", 1.0},
        {"KB", 1e3},
        {"MB", 1e6},
        {"GB", 1e9},
        {"KiB", 1024.0},
        {"MiB", 1024.0 * 1024},
        {"GiB", 1024.0 * 1024 * 1024},
    }};
    for (const auto& [name, factor] : kUnits) {
        if (name == unit) {
            const double bytes = number * factor;
            if (bytes > static_cast<double>(kMaxByteCount)) {
                return make_error(Errc::invalid_argument, "{}={}: larger than 1 PB", param, text);
            }
            if (bytes != std::floor(bytes)) {
                return make_error(Errc::invalid_argument, "{}={}: not a whole number of bytes", param, text);
            }
            return static_cast<std::size_t>(bytes);
        }
    }
    return make_error(Errc::invalid_argument, "{}={}: unknown unit '{}' (expected B, KB, MB, GB, KiB, MiB or GiB)",
                      param, text, unit);
}

}  // namespace strata::workflow
