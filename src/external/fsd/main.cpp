// SPDX-License-Identifier: MIT
// strata-fsd: serves data blocks of one runtime as files under <dir>/mnt/db/<id>.
//
//   strata-fsd --dir <private dir> [--owner <pid>] [--ready-fd <n>]
//
// <dir> is a mkdtemp 0700 directory made by the runtime: the daemon mounts
// <dir>/mnt and listens on ipc://<dir>/ctl (protocol.hpp). It writes "ready\n"
// or "error <message>\n" to the ready descriptor, then serves until the owner
// dies (pidfd), `quit` arrives, SIGTERM/SIGINT/SIGHUP, or the mount goes away;
// it then unmounts (lazily: a program still holding a file gets ENOTCONN) and
// removes <dir>. Started by FuseExposure; `strata fs mount` starts one by hand.
#include <linux/close_range.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <zmq.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>

#include <fmt/format.h>

#include "daemon.hpp"
#include "protocol.hpp"

namespace {

using strata::external::fsd::Daemon;

int g_ready_fd = -1;

void say_ready(const std::string& line) {
    if (g_ready_fd >= 0) {
        (void)!::write(g_ready_fd, line.data(), line.size());
        ::close(g_ready_fd);
        g_ready_fd = -1;
    }
}

[[noreturn]] void fail(const std::string& message) {
    say_ready("error " + message + "\n");
    fmt::print(stderr, "strata-fsd: error: {}\n", message);
    std::_Exit(1);
}

void remove_private_dir(const Daemon& daemon) {
    ::rmdir(daemon.mount_point.c_str());
    ::unlink((daemon.dir + "/ctl").c_str());
    ::rmdir(daemon.dir.c_str());
}

}  // namespace

int main(int argc, char** argv) {
    // Descriptors the runtime left inheritable (a pipe to another child, say)
    // must not be held open by a daemon that outlives that child.
    ::close_range(4, ~0U, 0);
    Daemon daemon;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string_view key = argv[i];
        if (key == "--dir") {
            daemon.dir = argv[i + 1];
        } else if (key == "--owner") {
            daemon.owner = static_cast<pid_t>(std::atoi(argv[i + 1]));
        } else if (key == "--ready-fd") {
            g_ready_fd = std::atoi(argv[i + 1]);
        } else {
            fail(fmt::format("unknown option {}", key));
        }
    }
    if (daemon.dir.empty()) {
        fail("--dir is required");
    }
    daemon.mount_point = daemon.dir + "/mnt";
    daemon.registry.set_owner(daemon.owner);

    // Signals are read by the control thread, never delivered to FUSE workers.
    sigset_t signals;
    sigemptyset(&signals);
    for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
        sigaddset(&signals, sig);
    }
    sigaddset(&signals, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    sigdelset(&signals, SIGPIPE);
    const int signal_fd = ::signalfd(-1, &signals, SFD_CLOEXEC);

    int owner_pidfd = -1;
    if (daemon.owner > 0) {
        owner_pidfd = static_cast<int>(::syscall(SYS_pidfd_open, daemon.owner, 0));
        if (owner_pidfd < 0) {
            fail(fmt::format("--owner {}: pidfd_open: {}", daemon.owner, std::strerror(errno)));
        }
    }

    const std::string options =
        fmt::format("fsname={}:{},subtype={}", strata::external::fsd::kName, ::getpid(), strata::external::fsd::kName);
    std::string arg0(strata::external::fsd::kName);
    std::string dash_o = "-o";
    std::string opts = options;
    char* args_v[] = {arg0.data(), dash_o.data(), opts.data(), nullptr};
    fuse_args args = FUSE_ARGS_INIT(3, args_v);
    const fuse_lowlevel_ops ops = strata::external::fsd::make_operations();
    daemon.session = fuse_session_new(&args, &ops, sizeof(ops), &daemon);
    if (daemon.session == nullptr) {
        fail("fuse_session_new failed");
    }
    if (fuse_session_mount(daemon.session, daemon.mount_point.c_str()) != 0) {
        fail(fmt::format("cannot mount {} (see the message above)", daemon.mount_point));
    }

    void* context = zmq_ctx_new();
    void* socket = zmq_socket(context, ZMQ_REP);
    const int no_linger = 0;
    zmq_setsockopt(socket, ZMQ_LINGER, &no_linger, sizeof(no_linger));
    const std::string endpoint = "ipc://" + daemon.dir + "/ctl";
    if (zmq_bind(socket, endpoint.c_str()) != 0) {
        const std::string why = zmq_strerror(errno);
        fuse_session_unmount(daemon.session);
        fail(fmt::format("cannot bind {}: {}", endpoint, why));
    }

    const int loop_done = ::eventfd(0, EFD_CLOEXEC);
    std::thread loop([&] {
        fuse_loop_config* config = fuse_loop_cfg_create();
        fuse_loop_cfg_set_max_threads(config, 16);
        fuse_loop_cfg_set_idle_threads(config, 4);
        fuse_session_loop_mt(daemon.session, config);
        fuse_loop_cfg_destroy(config);
        const std::uint64_t one = 1;
        (void)!::write(loop_done, &one, sizeof(one));
    });
    loop.detach();

    say_ready("ready\n");
    const std::string reason = strata::external::fsd::serve_control(daemon, socket, owner_pidfd, signal_fd, loop_done);
    if (std::getenv("STRATA_FSD_VERBOSE") != nullptr) {
        fmt::print(stderr, "strata-fsd: exiting: {}\n", reason);
    }
    // Close our own pinned files first, so the lazy unmount can complete.
    strata::external::fsd::forget_entries(daemon, daemon.registry.all());
    zmq_close(socket);
    zmq_ctx_term(context);
    fuse_session_unmount(daemon.session);
    remove_private_dir(daemon);
    // Exiting closes /dev/fuse: the kernel aborts requests still in flight.
    std::_Exit(0);
}
