// SPDX-License-Identifier: MIT
// Call sites in messages: the file name travels (its address means nothing on
// another rank) and the receiver keeps one copy of each name for the run.
#pragma once

#include "cluster.hpp"

namespace strata::ocr::dist {

inline void write_site(Writer& message, const CallSite& site) {
    message.str(site.file != nullptr ? site.file : "").u32(static_cast<std::uint32_t>(site.line));
}

inline CallSite read_site(Cluster& cluster, Reader& in) {
    const std::string file = in.str();
    const auto line = static_cast<int>(in.u32());
    return CallSite{cluster.intern(file), line};
}

}  // namespace strata::ocr::dist
