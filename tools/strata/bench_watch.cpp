// SPDX-License-Identifier: MIT
#include "bench_watch.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

namespace strata::cli {

namespace {

volatile sig_atomic_t suite_pid = 0;

void pass_on(int signal) {
    if (suite_pid > 0) ::kill(static_cast<pid_t>(suite_pid), signal);
}

void write_all(int fd, const char* data, std::size_t size) {
    while (size > 0) {
        const ssize_t n = ::write(fd, data, size);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        data += n;
        size -= static_cast<std::size_t>(n);
    }
}

// One pipe from the suite: its progress lines, its stderr or its stdout.
struct Source {
    int fd = -1;
    int relay_to = -1;  ///< -1: the progress pipe
};

struct Pipes {
    int progress[2] = {-1, -1};
    int err[2] = {-1, -1};
    int out[2] = {-1, -1};  ///< only when stdout is a terminal
    ~Pipes() {
        for (int* p : {progress, err, out}) {
            for (int i = 0; i < 2; ++i) {
                if (p[i] >= 0) ::close(p[i]);
            }
        }
    }
};

[[noreturn]] void exec_suite(const std::filesystem::path& script, const std::vector<char*>& argv, Pipes& pipes,
                             const sigset_t& mask) {
    ::sigprocmask(SIG_SETMASK, &mask, nullptr);
    // The suite (and what it starts) keeps the progress pipe's write end across exec.
    ::fcntl(pipes.progress[1], F_SETFD, 0);
    ::dup2(pipes.err[1], STDERR_FILENO);
    if (pipes.out[1] >= 0) ::dup2(pipes.out[1], STDOUT_FILENO);
    ::execv(script.c_str(), argv.data());
    std::fprintf(stderr, "strata bench: cannot run %s: %s\n", script.c_str(), std::strerror(errno));
    ::_exit(126);
}

class Watch {
public:
    explicit Watch(progress::Line& line) : line_(line) {}

    // Reads what `source` has; false at its end.
    bool read_from(const Source& source) {
        char buffer[65536];
        const ssize_t n = ::read(source.fd, buffer, sizeof buffer);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
        if (n <= 0) return false;
        const auto size = static_cast<std::size_t>(n);
        if (source.relay_to < 0) {
            take_progress(std::string_view(buffer, size));
        } else {
            line_.clear();
            write_all(source.relay_to, buffer, size);
            // A partial line (a prompt, a dot per step) stays alone on the screen until it ends.
            mid_line_ = buffer[size - 1] != '\n';
        }
        return true;
    }

    void draw() {
        if (!mid_line_) line_.show(status_);
    }

private:
    void take_progress(std::string_view bytes) {
        pending_ += bytes;
        for (auto end = pending_.find('\n'); end != std::string::npos; end = pending_.find('\n')) {
            if (auto text = bench_step_text(std::string_view(pending_).substr(0, end))) status_ = *text;
            pending_.erase(0, end + 1);
        }
    }

    progress::Line& line_;
    std::string pending_;  ///< a progress line not yet complete
    std::string status_;
    bool mid_line_ = false;
};

int exit_code_of(int status) {
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return 1;
}

}  // namespace

std::optional<std::string> bench_step_text(std::string_view protocol_line) {
    const std::string text(protocol_line);
    unsigned long long step = 0;
    unsigned long long total = 0;
    int consumed = 0;
    if (std::sscanf(text.c_str(), "%llu %llu %n", &step, &total, &consumed) != 2 || consumed == 0) {
        return std::nullopt;
    }
    const std::string what = text.substr(static_cast<std::size_t>(consumed));
    if (total == 0) return what;
    return fmt::format("[{}/{}] {}", step, total, what);
}

int watch_suite(const std::filesystem::path& script, const std::vector<char*>& argv, progress::Line& line) {
    Pipes pipes;
    const bool relay_stdout = ::isatty(STDOUT_FILENO) != 0;
    if (::pipe2(pipes.progress, O_CLOEXEC) != 0 || ::pipe2(pipes.err, O_CLOEXEC) != 0 ||
        (relay_stdout && ::pipe2(pipes.out, O_CLOEXEC) != 0)) {
        fmt::print(stderr, "strata bench: cannot make a pipe for the suite: {}\n", std::strerror(errno));
        return 1;
    }
    ::setenv("STRATA_PROGRESS_FD", std::to_string(pipes.progress[1]).c_str(), 1);
    // Python parts of a suite write their stderr, now a pipe, line by line as on a terminal.
    ::setenv("PYTHONUNBUFFERED", "1", 0);
    // Blocked from before the fork until the handlers are in place: a SIGTERM
    // in between reaches the suite too.
    sigset_t handled;
    sigset_t before;
    sigemptyset(&handled);
    for (int signal : {SIGINT, SIGQUIT, SIGTERM, SIGHUP}) sigaddset(&handled, signal);
    ::sigprocmask(SIG_BLOCK, &handled, &before);
    const pid_t child = ::fork();
    if (child < 0) {
        const int err = errno;
        ::sigprocmask(SIG_SETMASK, &before, nullptr);
        fmt::print(stderr, "strata bench: cannot start {}: {}\n", script.string(), std::strerror(err));
        return 1;
    }
    if (child == 0) exec_suite(script, argv, pipes, before);
    suite_pid = child;
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    struct sigaction forward {};
    forward.sa_handler = pass_on;
    for (int signal : {SIGINT, SIGQUIT}) ::sigaction(signal, &ignore, nullptr);
    for (int signal : {SIGTERM, SIGHUP}) ::sigaction(signal, &forward, nullptr);
    ::sigprocmask(SIG_SETMASK, &before, nullptr);
    for (int* p : {pipes.progress, pipes.err, pipes.out}) {
        if (p[1] >= 0) ::close(p[1]);
        p[1] = -1;
    }

    std::vector<Source> sources{{pipes.progress[0], -1}, {pipes.err[0], STDERR_FILENO}};
    if (relay_stdout) sources.push_back({pipes.out[0], STDOUT_FILENO});
    Watch watch(line);
    int status = 0;
    bool exited = false;
    // Until the suite exits, not until its pipes end: a daemon it started may
    // hold them open. After it exits, what is already written (a few rounds).
    for (int rounds_after_exit = 0; rounds_after_exit < 100;) {
        std::vector<pollfd> fds;
        for (const auto& s : sources) fds.push_back({s.fd, POLLIN, 0});
        const int ready = ::poll(fds.data(), fds.size(), exited ? 0 : 250);
        for (std::size_t i = fds.size(); i-- > 0;) {
            if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) != 0 && !watch.read_from(sources[i])) {
                sources.erase(sources.begin() + static_cast<std::ptrdiff_t>(i));
            }
        }
        if (exited) {
            if (ready <= 0) break;
            ++rounds_after_exit;
            continue;
        }
        watch.draw();
        exited = ::waitpid(child, &status, WNOHANG) == child;
    }
    line.clear();
    suite_pid = 0;
    return exit_code_of(status);
}

}  // namespace strata::cli
