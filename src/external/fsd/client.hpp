// SPDX-License-Identifier: MIT
// The runtime's side of one strata-fsd daemon: starts it, talks to it over
// the control socket (protocol.hpp), watches it, and stops it.
//
// start() makes a private directory (mkdtemp 0700 under $TMPDIR or /tmp),
// spawns the daemon (its own session, so a terminal's ^C reaches the owner,
// which stops it) with --owner = this process, and waits until it has
// mounted. A watcher thread sees the daemon die (pidfd) and at once unmounts
// lazily and removes the directory; every later request fails with
// Errc::peer_dead. The destructor asks the daemon to quit, reaps it and
// removes whatever is left. A forked child's copy does nothing.
//
// Thread safety: request() and the accessors may be called from any thread.
// Errors: strata::Result; start() leaves no process, mount or directory on failure.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "strata/error.hpp"

namespace strata::external::fsd {

struct ClientOptions {
    std::string executable;                    ///< strata-fsd; empty: find_daemon()
    bool owned = true;                         ///< the daemon exits with this process; false for `strata fs mount`
    std::chrono::milliseconds timeout{10000};  ///< start and per-request bound
};

/// strata-fsd's path: $STRATA_FSD, else beside the running executable, else
/// the build tree's, else PATH.
std::string find_daemon();

class Client {
public:
    static Result<std::unique_ptr<Client>> start(const ClientOptions& options);
    ~Client();
    Client(const Client&) = delete;
    Client& operator=(const Client&) = delete;

    /// Sends one request; returns the reply's words after "ok".
    Result<std::string> request(const std::string& text);
    /// Opens the daemon's descriptor `fd` (an output's memfd) as our own.
    Result<int> open_daemon_fd(int fd, int flags);

    [[nodiscard]] const std::string& mount_point() const { return mount_point_; }
    [[nodiscard]] pid_t pid() const { return pid_; }
    [[nodiscard]] bool alive() const { return !dead_.load(); }
    /// Leaves the daemon running after this object is gone (`strata fs mount`).
    void detach() { detached_ = true; }
    /// Stops the daemon now (what the destructor does): asks it to quit, kills
    /// it after 2 s, unmounts lazily and removes the directory. Later requests
    /// fail with Errc::peer_dead. Idempotent; a forked child's copy does nothing.
    void shutdown() noexcept;

private:
    Client() = default;
    void watch();
    void on_death();
    Error dead_error() const;

    std::string dir_;
    std::string mount_point_;
    pid_t pid_ = 0;
    pid_t creator_ = 0;
    int pidfd_ = -1;
    int stop_fd_ = -1;
    std::atomic<std::chrono::milliseconds> timeout_{};
    void* context_ = nullptr;
    void* socket_ = nullptr;
    std::mutex socket_mutex_;
    std::mutex death_mutex_;
    std::atomic<bool> dead_{false};
    std::atomic<bool> stopped_{false};  ///< by shutdown(), not a death
    std::mutex shutdown_mutex_;
    bool detached_ = false;
    std::thread watcher_;
};

}  // namespace strata::external::fsd
