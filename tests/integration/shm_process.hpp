// SPDX-License-Identifier: MIT
// Children that run beside the test (the parent does not wait for them at once).
#pragma once

#include <csignal>
#include <cstdio>
#include <exception>

#include <sys/prctl.h>
#include <unistd.h>

#include "support/process.hpp"

namespace strata::test {

/// Forks a child running `body` (returning its exit code); returns its pid.
/// The child dies with the parent.
template <class Body>
pid_t spawn(Body&& body) {
    std::fflush(nullptr);
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid != 0) {
        return pid;
    }
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) {
        ::_exit(125);
    }
    int code = 126;
    try {
        code = body();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "exception in child: %s\n", e.what());
    }
    std::fflush(nullptr);
    ::_exit(code);
}

}  // namespace strata::test
