// SPDX-License-Identifier: MIT
// External programs in containers (container_launch.hpp).
#include "container_launch.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "strata/shm/segment.hpp"

namespace strata::external {

namespace {

// The tree libstrata was loaded from (<prefix>/lib/libstrata.so.0, or the build
// tree's lib/): bound at /opt/strata so a program inside can use strata too.
std::filesystem::path strata_tree() {
    Dl_info info{};
    if (::dladdr(reinterpret_cast<void*>(&containerize), &info) == 0 || info.dli_fname == nullptr) {
        return {};
    }
    std::error_code ec;
    const auto lib = std::filesystem::canonical(info.dli_fname, ec);
    return ec ? std::filesystem::path() : lib.parent_path().parent_path();
}

// Where a FUSE mount outside /tmp is bound inside the container.
constexpr std::string_view kFuseInside = "/strata/fsd";

// `text` with every occurrence of the host path `mount` (a directory of a
// random name, so never part of another word) replaced by kFuseInside.
std::string inside_path(std::string text, const std::string& mount) {
    for (std::size_t at = text.find(mount); at != std::string::npos; at = text.find(mount, at)) {
        const std::size_t end = at + mount.size();
        if (end < text.size() && text[end] != '/') {
            at = end;
            continue;
        }
        text.replace(at, mount.size(), kFuseInside);
        at += kFuseInside.size();
    }
    return text;
}

}  // namespace

Result<container::Bundle> containerize(const Entry& entry, const TaskFiles& files, SpawnRequest& request) {
    const std::string value = fmt::format("\"{}\"", entry.container);
    if (!request.cwd.empty() && !std::filesystem::path(request.cwd).is_absolute()) {
        return make_error(Errc::invalid_argument, "{}cwd {} is relative: in a container, cwd is a path inside it",
                          entry.where("container", value), request.cwd);
    }
    container::Spec spec;
    spec.args = request.argv;
    spec.env = request.env;
    spec.cwd = request.cwd.empty() ? "/tmp" : request.cwd;
    spec.name_prefix = "strata-external";
    if (entry.container != "strata") {
        spec.rootfs = entry.container;
    }
    spec.strata_root = strata_tree();
    // The segment directory, made when missing (as Segment::open would), so [handle:K] works inside.
    if (std::getenv("STRATA_SHM_DIR") == nullptr) {
        if (auto made = private_segment_dir(); !made) {
            return make_error(made.error().code, "{}{}", entry.where("container", value), made.error().message);
        }
    }
    spec.segment_dir = default_segment_dir();
    if (!request.inherit.empty()) {
        spec.preserve_fds = std::max(0, *std::max_element(request.inherit.begin(), request.inherit.end()) - 2);
    }
    if (const std::string mount = files.mount_dir(); !mount.empty()) {
        // The container's /tmp and /strata are tmpfs of its own: the mount point is
        // made there, never in the shared read-only image. Under /tmp the mount
        // keeps its path; elsewhere (TMPDIR=/work/tmp) it is bound at kFuseInside and
        // the paths of the command and environment are rewritten to it.
        if (mount.starts_with("/tmp/")) {
            spec.binds.push_back({mount, mount, false});
        } else {
            spec.binds.push_back({mount, kFuseInside, false});
            for (auto& arg : spec.args) {
                arg = inside_path(arg, mount);
            }
            for (auto& var : spec.env) {
                var.second = inside_path(var.second, mount);
            }
        }
    }
    auto bundle = container::Bundle::create(spec);
    if (!bundle) {
        return make_error(bundle.error().code, "{}{}", entry.where("container", value), bundle.error().message);
    }
    request.argv = bundle->run_argv();
    request.env.clear();  // the program's environment is the bundle's
    request.cwd.clear();
    return std::move(*bundle);
}

}  // namespace strata::external
