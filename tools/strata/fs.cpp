// SPDX-License-Identifier: MIT
// `strata fs mount|ls|umount`: strata-fsd mounts by hand (docs/external-fs.md).
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "external/fsd/client.hpp"
#include "external/fsd/mounts.hpp"

namespace strata::cli {

namespace fsd = strata::external::fsd;

int run_fs_mount(const FsOptions& options) {
    auto client = fsd::Client::start({.executable = {}, .owned = false});
    if (!client) {
        fmt::print(stderr, "strata fs mount: {}\n", client.error().what());
        return 1;
    }
    (*client)->detach();
    if (options.json) {
        fmt::print("{}\n",
                   nlohmann::json{{"mount_point", (*client)->mount_point()}, {"daemon", (*client)->pid()}}.dump());
    } else {
        fmt::print("{} (strata-fsd pid {}; stop it with: strata fs umount {})\n", (*client)->mount_point(),
                   (*client)->pid(), (*client)->mount_point());
    }
    return 0;
}

int run_fs_ls(const FsOptions& options) {
    // Stale mounts (their daemon died) answer ENOTCONN to everyone: remove them first.
    const auto removed = fsd::clean_stale_mounts();
    const auto mounts = fsd::list_mounts();
    if (options.json) {
        auto live = nlohmann::json::array();
        for (const auto& m : mounts) {
            live.push_back({{"mount_point", m.mount_point}, {"daemon", m.daemon}, {"alive", m.alive}});
        }
        fmt::print("{}\n", nlohmann::json{{"mounts", live}, {"removed_stale", removed}}.dump());
        return 0;
    }
    for (const auto& path : removed) {
        fmt::print("removed stale mount {} (its strata-fsd was dead)\n", path);
    }
    if (mounts.empty()) {
        fmt::print("no strata-fsd mounts\n");
    }
    for (const auto& m : mounts) {
        fmt::print("{}  strata-fsd pid {}{}\n", m.mount_point, m.daemon, m.alive ? "" : " (dead)");
    }
    return 0;
}

int run_fs_umount(const FsOptions& options) {
    int failures = 0;
    bool found = false;
    for (const auto& m : fsd::list_mounts()) {
        if (!options.all && m.mount_point != options.mount_point) {
            continue;
        }
        found = true;
        if (m.alive) {
            // The daemon unmounts and removes its directory on SIGTERM.
            const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, m.daemon, 0));
            ::kill(m.daemon, SIGTERM);
            pollfd pfd{pidfd, POLLIN, 0};
            ::poll(&pfd, 1, 2000);
            ::close(pidfd);
        }
        if (auto removed = fsd::remove_mount(m.mount_point); !removed) {
            fmt::print(stderr, "strata fs umount: {}\n", removed.error().what());
            ++failures;
        } else {
            fmt::print("unmounted {}\n", m.mount_point);
        }
    }
    if (!found && !options.all) {
        fmt::print(stderr, "strata fs umount: mount_point={}: not a strata-fsd mount (see strata fs ls)\n",
                   options.mount_point);
        return 2;
    }
    return failures == 0 ? 0 : 1;
}

}  // namespace strata::cli
