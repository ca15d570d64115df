// SPDX-License-Identifier: MIT
// A check of text before it reaches toml++. TOML forbids control characters
// (U+0000..U+0008, U+000A..U+001F but line feed, U+007F) outside escapes, and
// Debian's toml++ 3.3.0 does not always reject them itself: one right after a
// table header's '[' reaches an internal assumption (TOML_ASSERT_ASSUME: an
// assertion failure in a debug build, undefined behaviour in a release build).
// Found by tests/fuzz/external_config; both TOML readers call this first.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace strata::detail {

/// "line L, column C: control character U+00XX" for the first control
/// character of `text` other than tab, line feed and carriage return; empty
/// when there is none. Columns count bytes from 1.
inline std::string toml_control_character(std::string_view text) {
    std::size_t line = 1;
    std::size_t column = 1;
    for (const char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        if (c == '\n') {
            ++line;
            column = 1;
            continue;
        }
        if ((c < 0x20 && c != '\t' && c != '\r') || c == 0x7f) {
            return fmt::format("line {}, column {}: control character U+{:04X} (TOML allows only tab, CR and LF)", line,
                               column, c);
        }
        ++column;
    }
    return {};
}

}  // namespace strata::detail
