// SPDX-License-Identifier: MIT
// Starting, talking to and stopping strata-fsd (see client.hpp).
#include "client.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <zmq.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

#include <fmt/format.h>

#include "mounts.hpp"
#include "protocol.hpp"

extern char** environ;

namespace strata::external::fsd {

namespace {

using Clock = std::chrono::steady_clock;

void reap(int pidfd) {
    siginfo_t info{};
    ::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd), &info, WEXITED | WNOHANG);
}

bool wait_readable(int fd, std::chrono::milliseconds timeout) {
    pollfd pfd{fd, POLLIN, 0};
    return ::poll(&pfd, 1, static_cast<int>(timeout.count())) == 1;
}

// Reads the daemon's one status line ("ready" or "error <message>"), bounded
// by `deadline`; an empty string means it exited or stayed silent.
std::string read_status(int fd, int pidfd, Clock::time_point deadline) {
    std::string text;
    while (text.find('\n') == std::string::npos) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0) {
            break;
        }
        pollfd fds[2] = {{fd, POLLIN, 0}, {pidfd, POLLIN, 0}};
        if (::poll(fds, 2, static_cast<int>(left.count())) <= 0) {
            continue;
        }
        char buf[512];
        const ssize_t n = ::read(fd, buf, sizeof(buf));
        if (n <= 0) {
            break;  // EOF: the daemon exited (its error line, if any, came first)
        }
        text.append(buf, static_cast<std::size_t>(n));
    }
    return text.substr(0, text.find('\n'));
}

}  // namespace

std::string find_daemon() {
    if (const char* env = std::getenv("STRATA_FSD"); env != nullptr && *env != '\0') {
        return env;
    }
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec && ::access((exe.parent_path() / kName).c_str(), X_OK) == 0) {
        return (exe.parent_path() / kName).string();
    }
    // Linked into a shared library (libstrata-ocr.so in <prefix>/lib): <prefix>/bin.
    Dl_info info{};
    if (::dladdr(reinterpret_cast<void*>(&find_daemon), &info) != 0 && info.dli_fname != nullptr) {
        const auto bin = std::filesystem::path(info.dli_fname).parent_path().parent_path() / "bin" / kName;
        if (::access(bin.c_str(), X_OK) == 0) {
            return bin.string();
        }
    }
#ifdef STRATA_FSD_BUILD_PATH
    if (::access(STRATA_FSD_BUILD_PATH, X_OK) == 0) {
        return STRATA_FSD_BUILD_PATH;
    }
#endif
    return std::string(kName);  // posix_spawnp searches PATH
}

Result<std::unique_ptr<Client>> Client::start(const ClientOptions& options) {
    clean_stale_mounts();  // mounts left by runtimes killed with their daemon
    const std::string executable = options.executable.empty() ? find_daemon() : options.executable;
    const char* tmp = std::getenv("TMPDIR");
    std::string dir = fmt::format("{}/{}-XXXXXX", tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", kName);
    if (::mkdtemp(dir.data()) == nullptr) {
        return make_sys_error(errno, "FuseExposure: cannot make a private directory {}", dir);
    }
    std::unique_ptr<Client> client(new Client());
    client->dir_ = dir;
    client->mount_point_ = dir + "/mnt";
    client->creator_ = ::getpid();
    client->timeout_ = options.timeout;
    if (::mkdir(client->mount_point_.c_str(), 0700) != 0) {
        const int err = errno;
        ::rmdir(dir.c_str());
        return make_sys_error(err, "FuseExposure: cannot make the mount point {}", client->mount_point_);
    }
    auto undo_dir = [&] { remove_mount(client->mount_point_); };

    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
        const int err = errno;
        undo_dir();
        return make_sys_error(err, "FuseExposure: pipe");
    }
    constexpr int kReadyFd = 3;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    // dup2 onto itself would keep O_CLOEXEC; go through a spare number then.
    const int spare = pipe_fds[1] == kReadyFd ? ::fcntl(pipe_fds[1], F_DUPFD_CLOEXEC, 10) : pipe_fds[1];
    posix_spawn_file_actions_adddup2(&actions, spare, kReadyFd);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    std::vector<std::string> args{executable,
                                  "--dir",
                                  dir,
                                  "--owner",
                                  std::to_string(options.owned ? ::getpid() : 0),
                                  "--ready-fd",
                                  std::to_string(kReadyFd)};
    std::vector<char*> argv;
    argv.reserve(args.size() + 1);
    for (auto& a : args) {
        argv.push_back(a.data());
    }
    argv.push_back(nullptr);
    const int rc = ::posix_spawnp(&client->pid_, executable.c_str(), &actions, &attr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    ::close(pipe_fds[1]);
    if (spare != pipe_fds[1]) {
        ::close(spare);
    }
    if (rc != 0) {
        ::close(pipe_fds[0]);
        undo_dir();
        return make_sys_error(rc, "FuseExposure: cannot start the daemon {}", executable);
    }
    client->pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, client->pid_, 0));
    const std::string status = read_status(pipe_fds[0], client->pidfd_, Clock::now() + options.timeout);
    ::close(pipe_fds[0]);
    if (status != "ready") {
        ::kill(client->pid_, SIGKILL);
        ::waitpid(client->pid_, nullptr, 0);
        ::close(client->pidfd_);
        client->pidfd_ = -1;
        client->pid_ = 0;
        undo_dir();
        return make_error(Errc::unsupported, "FuseExposure: {} did not mount {}: {}", executable, client->mount_point_,
                          status.empty() ? "it exited or stayed silent for the start timeout" : status.substr(6));
    }
    client->context_ = zmq_ctx_new();
    client->socket_ = zmq_socket(client->context_, ZMQ_REQ);
    const int zero = 0, one = 1;
    zmq_setsockopt(client->socket_, ZMQ_LINGER, &zero, sizeof(zero));
    zmq_setsockopt(client->socket_, ZMQ_REQ_RELAXED, &one, sizeof(one));
    zmq_setsockopt(client->socket_, ZMQ_REQ_CORRELATE, &one, sizeof(one));
    zmq_connect(client->socket_, ("ipc://" + dir + "/ctl").c_str());
    client->stop_fd_ = ::eventfd(0, EFD_CLOEXEC);
    client->watcher_ = std::thread([c = client.get()] { c->watch(); });
    return client;
}

Error Client::dead_error() const {
    if (stopped_ && !detached_) {
        return Error{Errc::peer_dead,
                     fmt::format("FuseExposure: the daemon strata-fsd (pid {}) was stopped with the runtime; {} was "
                                 "unmounted",
                                 pid_, mount_point_),
                     ESRCH};
    }
    return Error{Errc::peer_dead,
                 fmt::format("FuseExposure: the daemon strata-fsd (pid {}) died; {} was unmounted", pid_, mount_point_),
                 ESRCH};
}

void Client::watch() {
    pollfd fds[2] = {{pidfd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    while (::poll(fds, 2, -1) < 0 && errno == EINTR) {
    }
    if ((fds[0].revents & POLLIN) != 0 && (fds[1].revents & POLLIN) == 0) {
        on_death();
        fmt::print(stderr, "strata: error: {}\n", dead_error().message);
    }
}

void Client::on_death() {
    const std::lock_guard lock(death_mutex_);
    if (dead_.exchange(true)) {
        return;
    }
    reap(pidfd_);
    remove_mount(mount_point_);
}

Result<std::string> Client::request(const std::string& text) {
    const std::lock_guard lock(socket_mutex_);
    if (dead_) {
        return std::unexpected(dead_error());
    }
    if (zmq_send(socket_, text.data(), text.size(), 0) < 0) {
        return make_sys_error(errno, "FuseExposure: cannot send '{}' to strata-fsd", text);
    }
    const auto deadline = Clock::now() + timeout_.load();
    for (;;) {
        zmq_pollitem_t items[2] = {{socket_, 0, ZMQ_POLLIN, 0}, {nullptr, pidfd_, ZMQ_POLLIN, 0}};
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0) {
            return make_error(Errc::timeout, "FuseExposure: strata-fsd (pid {}) did not answer '{}' within {} ms", pid_,
                              text, timeout_.load().count());
        }
        zmq_poll(items, 2, static_cast<long>(left.count()));
        if ((items[1].revents & ZMQ_POLLIN) != 0) {
            on_death();
            return std::unexpected(dead_error());
        }
        if ((items[0].revents & ZMQ_POLLIN) != 0) {
            break;
        }
    }
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    const int n = zmq_msg_recv(&msg, socket_, 0);
    std::string reply =
        n < 0 ? std::string() : std::string(static_cast<const char*>(zmq_msg_data(&msg)), zmq_msg_size(&msg));
    zmq_msg_close(&msg);
    if (reply == "ok" || reply.starts_with("ok ")) {
        return reply.size() > 3 ? reply.substr(3) : std::string();
    }
    const auto words = split_words(reply, 3);
    const int err = words.size() == 3 ? static_cast<int>(parse_u64(words[1]).value_or(EIO)) : EIO;
    return make_sys_error(err, "strata-fsd: {}", words.size() == 3 ? std::string(words[2]) : reply);
}

Result<int> Client::open_daemon_fd(int fd, int flags) {
    const std::string path = fmt::format("/proc/{}/fd/{}", pid_, fd);
    const int local = ::open(path.c_str(), flags | O_CLOEXEC);
    if (local < 0) {
        if (!alive() || ::kill(pid_, 0) != 0) {
            return std::unexpected(dead_error());
        }
        return make_sys_error(errno, "FuseExposure: cannot open the daemon's output descriptor {}", path);
    }
    return local;
}

void Client::shutdown() noexcept {
    if (::getpid() != creator_) {
        return;  // a forked child's copy: the daemon and the mount are the parent's
    }
    const std::lock_guard lock(shutdown_mutex_);
    if (stopped_.exchange(true) || pid_ <= 0) {
        return;  // stopped already, or start() failed before a daemon ran (never kill(0, ...))
    }
    const std::uint64_t one = 1;
    (void)!::write(stop_fd_, &one, sizeof(one));
    if (watcher_.joinable()) {
        watcher_.join();
    }
    if (!detached_ && !dead_) {
        timeout_ = std::chrono::milliseconds(2000);
        (void)request("quit");
        if (!wait_readable(pidfd_, std::chrono::milliseconds(2000))) {
            ::kill(pid_, SIGKILL);
            wait_readable(pidfd_, std::chrono::milliseconds(2000));
        }
        on_death();
    }
}

Client::~Client() {
    if (::getpid() != creator_) {
        return;  // a forked child's copy: the daemon and the mount are the parent's
    }
    shutdown();
    if (socket_ != nullptr) {
        zmq_close(socket_);
    }
    if (context_ != nullptr) {
        zmq_ctx_term(context_);
    }
    ::close(stop_fd_);
    ::close(pidfd_);
}

}  // namespace strata::external::fsd
