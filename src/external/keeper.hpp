// SPDX-License-Identifier: MIT
// The keeper: a small process that outlives the runtime only long enough to
// kill the external programs it left running.
//
// The reactor kills every program when the run ends, on SIGINT and SIGTERM;
// nothing of the runtime runs after a SIGKILL, though. So the reactor forks a
// keeper when it starts (its own session: a terminal's ^C does not reach it)
// and tells it, over a socket, each program's process group as it starts and as
// it is reaped. When the runtime dies, however, its end of the socket closes;
// the keeper reads EOF, kills every group it still knows with SIGKILL, with
// the descendants that left them (kill_trees, tree_kill.hpp), and exits. On a normal end the groups are all reaped
// first, and the destructor closes the socket and reaps the keeper.
//
// The keeper is forked from a threaded process, so it runs only system calls
// (no allocation, no locks) and keeps no descriptor but its end of the socket.
//
// Thread safety: add() and remove() may be called from any thread (one
// 4-byte send each). Errors: start() returns the errno of socketpair or fork;
// nothing is left on error. A keeper that died is ignored (no SIGPIPE).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>

#include "strata/error.hpp"

namespace strata::external {

class Keeper {
public:
    static Result<std::unique_ptr<Keeper>> start();
    ~Keeper();
    Keeper(const Keeper&) = delete;
    Keeper& operator=(const Keeper&) = delete;

    /// A program's process group to kill if the runtime dies.
    void add(pid_t group) noexcept;
    /// The group was reaped: forget it.
    void remove(pid_t group) noexcept;

    [[nodiscard]] pid_t pid() const noexcept { return pid_; }

private:
    Keeper(pid_t pid, int write_fd) : pid_(pid), write_fd_(write_fd) {}
    void send(std::int32_t record) noexcept;

    pid_t pid_ = -1;
    int write_fd_ = -1;
};

}  // namespace strata::external
