// SPDX-License-Identifier: MIT
// The strata-fsd mounts of this machine, and the removal of stale ones.
//
// A strata-fsd mount has file system type "fuse.strata-fsd" and source
// "strata-fsd:<daemon pid>"; its mount point is <private dir>/mnt. A mount is
// stale when its daemon is gone (killed with its owner, or by hand): the
// kernel then answers ENOTCONN on it until someone unmounts it.
//
// Thread safety: free functions without shared state.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "strata/error.hpp"

namespace strata::external::fsd {

struct MountInfo {
    std::string mount_point;
    pid_t daemon = 0;
    bool alive = false;  ///< the daemon process still runs
};

/// Every strata-fsd mount in this mount namespace (from /proc/self/mountinfo).
std::vector<MountInfo> list_mounts();

/// Whether `pid` is a running strata-fsd.
bool daemon_alive(pid_t pid);

/// Lazily unmounts `mount_point` (if mounted) and removes its private
/// directory (<dir>/mnt, <dir>/ctl, <dir>) when the directory is strata-fsd's.
Result<void> remove_mount(const std::string& mount_point);

/// Removes every mount whose daemon is dead; returns their mount points.
std::vector<std::string> clean_stale_mounts();

}  // namespace strata::external::fsd
