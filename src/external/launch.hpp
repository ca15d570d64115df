// SPDX-License-Identifier: MIT
// Starting one external program without a shell: posix_spawnp in its own
// process group, with a pidfd to wait on it (the reactor).
//
// The child gets: argv as given (argv[0] searched in PATH when it has no '/'),
// the runtime's environment plus `env` (same names replaced), stdin from
// /dev/null, stdout/stderr on the given descriptors (or the runtime's), every
// descriptor of `inherit` at its own number and nothing else strata opened
// (strata's descriptors are close-on-exec), default signal dispositions and
// an empty signal mask.
//
// Thread safety: spawn() may run on several threads at once.
// Errors: the errno of posix_spawn (ENOENT: no such program, EACCES, ...) or
// of pidfd_open; on error no process is left.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

#include "strata/error.hpp"

namespace strata::external {

struct SpawnRequest {
    std::vector<std::string> argv;
    std::vector<std::pair<std::string, std::string>> env;
    std::string cwd;           ///< empty: the runtime's
    std::vector<int> inherit;  ///< passed at the same number
    int stdout_fd = -1;        ///< -1: the runtime's stdout
    int stderr_fd = -1;        ///< -1: the runtime's stderr
};

struct Child {
    pid_t pid = -1;  ///< also its process group
    int pidfd = -1;  ///< owned by the caller
};

Result<Child> spawn(const SpawnRequest& request);

/// pidfd_open(2).
Result<int> open_pidfd(pid_t pid);

}  // namespace strata::external
