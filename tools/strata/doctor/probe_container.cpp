// SPDX-License-Identifier: MIT
// container: a real container as `strata container run` makes it (crun, the
// image scripts/container-image builds, its own pid/mount/uts/ipc namespaces),
// running a shell that checks it is pid 1 of its own pid namespace and that a
// directory bound in from the host is there. The bundle (and crun's state) is
// removed whatever happens; the check's directory is a fresh private one.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "container/container.hpp"
#include "probe.hpp"
#include "system.hpp"

namespace strata::doctor {

namespace {

using namespace std::chrono_literals;

constexpr auto kRunTimeout = 30s;
constexpr const char* kBound = "/strata-doctor-bound";
constexpr const char* kImageFix =
    "build the image as root: scripts/container-image (scripts/bootstrap does; it needs debootstrap and the Debian "
    "mirror)";

}  // namespace

Capability probe_container() {
    Capability cap("container", false);
    auto runtime = container::find_runtime();
    if (!runtime) {
        cap.detail = first_line(runtime.error().what());
        cap.fix = "apt-get install crun (scripts/bootstrap does)";
        return cap;
    }
    auto rootfs = container::default_rootfs();
    if (!rootfs) {
        cap.detail = first_line(rootfs.error().what());
        cap.fix = kImageFix;
        return cap;
    }
    std::error_code ec;
    const auto host_dir = std::filesystem::temp_directory_path(ec) / unique_name("container");
    if (ec || !std::filesystem::create_directory(host_dir, ec) || ec) {
        cap.detail = fmt::format("cannot make a directory to bind in: {}", ec ? ec.message() : "exists");
        return cap;
    }
    ScopeExit remove_dir([&host_dir] {
        std::error_code ignored;
        std::filesystem::remove_all(host_dir, ignored);
    });
    std::filesystem::permissions(host_dir, std::filesystem::perms::owner_all, ec);

    container::Spec spec;
    // pid 1 of its own pid namespace, and the bound directory visible.
    spec.args = {"/bin/sh", "-c", fmt::format("test \"$$\" = 1 && test -d {} && echo strata-container-ok", kBound)};
    spec.binds.push_back({.source = host_dir, .destination = kBound, .read_only = true});
    spec.name_prefix = "strata-doctor";
    auto bundle = container::Bundle::create(spec);
    if (!bundle) {
        cap.detail = first_line(bundle.error().what());
        cap.fix =
            bundle.error().code == Errc::permission_denied ? "run as root (crun without a user namespace)" : kImageFix;
        return cap;
    }
    const auto started = std::chrono::steady_clock::now();
    const auto ran = run_command(bundle->run_argv(), kRunTimeout);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
    bundle->remove();
    if (!ran.succeeded() || ran.output.find("strata-container-ok") == std::string::npos) {
        cap.detail = ran.timed_out ? fmt::format("{} did not end within {} s", runtime->string(), kRunTimeout.count())
                                   : fmt::format("{} run failed (exit {}): {}", runtime->string(), ran.exit_code,
                                                 first_line(ran.output));
        cap.fix = "see `strata container run -- /bin/true` for crun's own message";
        return cap;
    }
    cap.status = Status::ok;
    cap.detail = fmt::format("{} with the image at {}: own pid namespace, bind mounts ({} ms)",
                             runtime->filename().string(), rootfs->string(), ms.count());
    return cap;
}

}  // namespace strata::doctor
