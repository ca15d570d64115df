// SPDX-License-Identifier: MIT
// exposure = "auto" (auto_exposure.hpp).
#include "auto_exposure.hpp"

#include <fmt/format.h>

namespace strata::external {

AutoPick pick_automatic(const Result<void>& memfd_probe, const std::function<Result<void>()>& fuse_check) {
    if (memfd_probe) {
        return {ExposureKind::memfd,
                "memfd: memfds sealed with F_SEAL_FUTURE_WRITE work here (no daemon, no copy for blocks in memfds)"};
    }
    const std::string memfd_why = memfd_probe.error().message;
    auto fuse = fuse_check ? fuse_check() : make_error(Errc::unsupported, "no FUSE check given");
    if (fuse) {
        return {ExposureKind::fuse,
                fmt::format("fuse: the memfd path does not serve here ({}); strata-fsd mounted", memfd_why)};
    }
    return {std::nullopt, fmt::format("none: the memfd path does not serve here ({}) and strata-fsd did not mount ({})",
                                      memfd_why, fuse.error().message)};
}

}  // namespace strata::external
