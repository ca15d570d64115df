// SPDX-License-Identifier: MIT
// Command-line options of strata-bench-regions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "strata/error.hpp"

namespace strata::bench {

struct Options {
    std::size_t size = std::size_t{1} << 30;        ///< bytes per region (--size), page multiple
    std::size_t disk_size = std::size_t{1} << 30;   ///< bytes of the O_DIRECT file (--disk-size)
    int repeats = 5;                                ///< timed runs per measurement (--repeats)
    std::filesystem::path parent_dir = "/var/tmp";  ///< a fresh directory is made inside (--dir)
    std::filesystem::path json;                     ///< where to write the results (--json); empty: none
};

/// Parses "1G", "256M", "512KiB", "4096" (binary multiples); errors name `param`.
Result<std::size_t> parse_size(std::string_view text, std::string_view param);

/// "1 GiB", "256 MiB", "12345 B".
std::string format_size(std::size_t bytes);

/// Parses argv. Returns an exit code in `exit_code` when the program should stop
/// (--help or a usage error, already printed), otherwise the options.
Options parse_options(int argc, char** argv, int& exit_code);

}  // namespace strata::bench
