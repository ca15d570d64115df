// SPDX-License-Identifier: MIT
// The one thread that waits for every running external program: an epoll
// loop over their pidfds, their timeouts, and SIGINT/SIGTERM.
//
// Workers never wait for a program: they spawn it, hand it to watch() and go
// on with other tasks; the reactor reaps it and calls its on_exit.
//
// When a program's main process ends, the reactor kills what is left of its
// process group (SIGKILL, while the zombie still pins the group id) before
// reaping it, so no grandchild outlives its task. A timeout kills the group
// with SIGKILL. stop() kills every group, reaps every child and calls each
// on_exit with cancelled=true before it returns.
//
// SIGKILL of the runtime: a keeper process (keeper.hpp), told of every
// program's group, kills them when this process is gone.
//
// Signals: while a reactor exists, SIGINT and SIGTERM (when their disposition
// was the default) kill every running program's process group at once from
// the handler, then the reactor calls on_signal(sig) on its thread; a second
// signal of the same kind has the default effect.
//
// Thread safety: watch() and running() may be called from any thread;
// on_exit and on_signal run on the reactor thread, one at a time.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>

#include "launch.hpp"
#include "strata/error.hpp"

namespace strata::external {

struct ExitInfo {
    bool exited = false;  ///< ended by exit(): code is meaningful
    int code = -1;
    int signal = 0;          ///< killed by this signal
    bool timed_out = false;  ///< the reactor killed it at its deadline
    bool cancelled = false;  ///< killed by stop() or a SIGINT/SIGTERM of the runtime
    std::chrono::nanoseconds elapsed{0};
};

class Reactor {
public:
    using OnExit = std::function<void(const ExitInfo&)>;
    using OnSignal = std::function<void(int)>;

    /// Starts the thread and installs the signal handlers.
    static Result<std::unique_ptr<Reactor>> start(OnSignal on_signal);
    ~Reactor();
    Reactor(const Reactor&) = delete;
    Reactor& operator=(const Reactor&) = delete;

    /// Watches `child` (the reactor owns its pidfd from now on, also on error).
    /// Errors: busy after stop() began (the child is killed and reaped);
    /// the errno of epoll_ctl.
    Result<void> watch(Child child, std::optional<std::chrono::milliseconds> timeout, OnExit on_exit);

    /// Programs being watched.
    [[nodiscard]] std::size_t running() const;

    /// Kills and reaps every program, joins the thread, restores the signal
    /// handlers. Idempotent.
    void stop() noexcept;

    struct Impl;

private:
    explicit Reactor(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace strata::external
