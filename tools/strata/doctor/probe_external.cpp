// SPDX-License-Identifier: MIT
// external-exposure: which exposure `exposure = "auto"` picks for external
// programs here, and why (docs/external.md, "Exposures").
//
// It runs the runtime's own decision (src/external/auto_exposure.hpp) on real
// checks: a memfd sealed with F_SEAL_FUTURE_WRITE while mapped writable, and
// strata-fsd started, mounted and stopped. strata-fsd is tried even when memfd
// wins, so the line also says whether `exposure = "fuse"` would work.
#include <fmt/format.h>

#include "external/auto_exposure.hpp"
#include "external/fsd/client.hpp"
#include "external/fuse_exposure.hpp"
#include "external/memfd_exposure.hpp"
#include "probe.hpp"

namespace strata::doctor {

Capability probe_external_exposure() {
    Capability cap("external-exposure", false);
    const std::string daemon = external::fsd::find_daemon();
    external::FuseExposure fuse;
    const auto mounted = fuse.mount_point();
    const Result<void> fuse_result = mounted ? Result<void>{} : Result<void>{std::unexpected(mounted.error())};
    fuse.stop();
    const auto pick =
        external::pick_automatic(external::MemfdExposure::probe(), [&]() -> Result<void> { return fuse_result; });
    const std::string fuse_line = fuse_result
                                      ? fmt::format("exposure=fuse works ({} mounted and stopped)", daemon)
                                      : fmt::format("exposure=fuse would fail: {}", fuse_result.error().message);
    cap.detail = fmt::format("auto picks {}; {}", pick.reason, fuse_line);
    if (!pick.kind) {
        cap.fix =
            "a kernel >= 5.1 without a seccomp filter on memfd_create (memfd path), or FUSE with strata-fsd "
            "(see the fuse line; STRATA_FSD names the daemon)";
        return cap;
    }
    cap.status = fuse_result ? Status::ok : Status::degraded;
    if (!fuse_result) {
        cap.fix = fmt::format("exposure=fuse needs FUSE (see the fuse line) and strata-fsd ({}; STRATA_FSD)", daemon);
    }
    return cap;
}

}  // namespace strata::doctor
