// SPDX-License-Identifier: MIT
#include "options.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <span>
#include <string>

#include <fmt/format.h>
#include <unistd.h>

namespace strata::bench {

Result<std::size_t> parse_size(std::string_view text, std::string_view param) {
    std::uint64_t number = 0;
    const char* const end = text.data() + text.size();
    const auto [rest, ec] = std::from_chars(text.data(), end, number);
    if (ec != std::errc{} || rest == text.data()) {
        return make_error(Errc::invalid_argument,
                          "{}={}: not a size (expected a number with an optional K, M, G or T suffix)", param, text);
    }
    std::string suffix(rest, end);
    for (auto& c : suffix) {
        c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    // Binary multiples whatever the spelling: "G", "GB" and "GiB" all mean 2^30.
    constexpr std::array<std::pair<std::string_view, unsigned>, 5> units{
        {{"", 0}, {"K", 10}, {"M", 20}, {"G", 30}, {"T", 40}}};
    std::string_view unit = suffix;
    if (unit.ends_with("IB")) {
        unit.remove_suffix(2);
    } else if (unit.ends_with('B')) {
        unit.remove_suffix(1);
    }
    const auto* found = std::find_if(units.begin(), units.end(), [&](const auto& u) { return u.first == unit; });
    if (found == units.end() || (suffix.size() > 1 && suffix.ends_with("IB") && unit.empty())) {
        return make_error(Errc::invalid_argument, "{}={}: unknown suffix '{}' (use K, M, G or T, binary multiples)",
                          param, text, suffix);
    }
    const unsigned shift = found->second;
    if (shift > 0 && number > (std::uint64_t{~0ULL} >> shift)) {
        return make_error(Errc::invalid_argument, "{}={}: too large", param, text);
    }
    return static_cast<std::size_t>(number << shift);
}

std::string format_size(std::size_t bytes) {
    constexpr std::array<std::string_view, 5> units{"B", "KiB", "MiB", "GiB", "TiB"};
    std::size_t unit = 0;
    std::size_t value = bytes;
    while (unit + 1 < units.size() && value >= 1024 && value % 1024 == 0) {
        value /= 1024;
        ++unit;
    }
    return fmt::format("{} {}", value, units[unit]);
}

namespace {

constexpr std::string_view usage = R"(usage: strata-bench-regions [--size SIZE] [--repeats N] [--dir DIR]
                            [--disk-size SIZE] [--json FILE]

Warm in-memory bandwidth of every region kind against malloc'd memory, the
physical limits (memcpy, O_DIRECT disk) and the cost of Region::sync().

  --size SIZE       bytes per region, e.g. 1G, 256M (default 1G)
  --repeats N       timed runs per measurement, 1..1000 (default 5)
  --dir DIR         directory on the storage to measure; a fresh subdirectory
                    is created inside and removed (default /var/tmp; tmpfs is
                    refused)
  --disk-size SIZE  bytes of the O_DIRECT disk file (default 1G)
  --json FILE       write the results as JSON to FILE
)";

std::size_t round_up(std::size_t value, std::size_t multiple) {
    return (value + multiple - 1) / multiple * multiple;
}

Result<int> parse_repeats(std::string_view text) {
    int value = 0;
    const char* const end = text.data() + text.size();
    const auto [rest, ec] = std::from_chars(text.data(), end, value);
    if (ec != std::errc{} || rest != end || value < 1 || value > 1000) {
        return make_error(Errc::invalid_argument, "--repeats={}: expected an integer in 1..1000", text);
    }
    return value;
}

// Applies one "--name value" pair.
Result<void> apply(Options& options, std::string_view name, std::string_view value) {
    if (name == "--size" || name == "--disk-size") {
        auto size = parse_size(value, name);
        if (!size) {
            return std::unexpected(size.error());
        }
        (name == "--size" ? options.size : options.disk_size) = *size;
    } else if (name == "--repeats") {
        auto repeats = parse_repeats(value);
        if (!repeats) {
            return std::unexpected(repeats.error());
        }
        options.repeats = *repeats;
    } else if (name == "--dir") {
        options.parent_dir = std::string(value);
    } else if (name == "--json") {
        options.json = std::string(value);
    } else {
        return make_error(Errc::invalid_argument, "{}: unknown option", name);
    }
    return {};
}

Result<void> validate(Options& options) {
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    constexpr std::size_t direct_chunk = std::size_t{8} << 20;  // see limits.cpp
    if (options.size < 16 * page) {
        return make_error(Errc::invalid_argument, "--size={}: too small (at least {} bytes)", options.size, 16 * page);
    }
    if (options.disk_size < direct_chunk) {
        return make_error(Errc::invalid_argument, "--disk-size={}: too small (at least {})", options.disk_size,
                          format_size(direct_chunk));
    }
    if (options.parent_dir.empty()) {
        return make_error(Errc::invalid_argument, "--dir: must not be empty");
    }
    options.size = round_up(options.size, page);
    options.disk_size = round_up(options.disk_size, direct_chunk);
    return {};
}

}  // namespace

Options parse_options(int argc, char** argv, int& exit_code) {
    Options options;
    exit_code = -1;
    const std::span<char*> args(argv, static_cast<std::size_t>(argc));
    for (std::size_t i = 1; i < args.size(); ++i) {
        const std::string_view arg = args[i];
        if (arg == "-h" || arg == "--help") {
            fmt::print("{}", usage);
            exit_code = 0;
            return options;
        }
        // Both "--name value" and "--name=value".
        std::string_view name = arg;
        std::string_view value;
        if (const auto eq = arg.find('='); arg.starts_with("--") && eq != std::string_view::npos) {
            name = arg.substr(0, eq);
            value = arg.substr(eq + 1);
        } else if (i + 1 < args.size()) {
            value = args[++i];
        } else {
            fmt::print(stderr, "strata-bench-regions: {}: missing value (see --help)\n", arg);
            exit_code = 2;
            return options;
        }
        if (auto applied = apply(options, name, value); !applied) {
            fmt::print(stderr, "strata-bench-regions: {} (see --help)\n", applied.error().message);
            exit_code = 2;
            return options;
        }
    }
    if (auto valid = validate(options); !valid) {
        fmt::print(stderr, "strata-bench-regions: {}\n", valid.error().message);
        exit_code = 2;
    }
    return options;
}

}  // namespace strata::bench
