// SPDX-License-Identifier: MIT
// strata-fsd's process-wide state, shared by the FUSE workers (ops.cpp) and
// the control thread (control.cpp).
#pragma once

#define FUSE_USE_VERSION 312  // the newest API level libfuse 3.14 defines
#include <fuse_lowlevel.h>

#include <sys/types.h>

#include <string>

#include "registry.hpp"

namespace strata::external::fsd {

struct Daemon {
    fuse_session* session = nullptr;
    Registry registry{std::chrono::milliseconds(2000)};
    pid_t owner = 0;          ///< the runtime that started the daemon (0: none, `strata fs mount`)
    std::string dir;          ///< the private directory: mnt/ and ctl
    std::string mount_point;  ///< dir + "/mnt"
};

/// The low-level operations serving /db/<id>; userdata is the Daemon.
fuse_lowlevel_ops make_operations();

/// Serves the control socket until quit, the owner's death, a signal or the
/// end of the FUSE loop (`loop_done`, an eventfd). Returns the reason.
std::string serve_control(Daemon& daemon, void* zmq_socket, int owner_pidfd, int signal_fd, int loop_done);

/// Pushes an input's bytes into the kernel's page cache (the fast path) and
/// pins the inode with an open file of the daemon's own; errno or 0.
int store_in_page_cache(Daemon& daemon, Entry& entry, std::string& error);
/// Drops the kernel's dentry and cached pages of entries no longer registered.
void forget_entries(Daemon& daemon, const std::vector<std::shared_ptr<Entry>>& entries);

}  // namespace strata::external::fsd
