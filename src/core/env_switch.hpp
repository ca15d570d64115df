// SPDX-License-Identifier: MIT
// An on/off switch read from the environment, as libstrata-dsm and distributed
// OCR read theirs (docs/options.md).
#pragma once

#include <cstdlib>
#include <string_view>

#include "strata/error.hpp"

namespace strata::core {

/// $`name` as a switch: unset or empty gives `fallback`, `0` false, `1` true; any other value
/// is invalid_argument "<name>=<value>: not 0 or 1".
inline Result<bool> env_switch(const char* name, bool fallback) {
    const char* env = std::getenv(name);
    if (env == nullptr || *env == '\0') {
        return fallback;
    }
    const std::string_view value(env);
    if (value == "0" || value == "1") {
        return value == "1";
    }
    return make_error(Errc::invalid_argument, "{}={}: not 0 or 1", name, value);
}

}  // namespace strata::core
