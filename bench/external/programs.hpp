// SPDX-License-Identifier: MIT
// Starting the benchmark's external programs (reader.c, writer.c) and
// collecting what they print: each waits for a "go" byte on stdin, so the
// harness can register the pid with strata-fsd before the clock starts.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

extern char** environ;

namespace strata::bench {

class Program {
public:
    /// Starts `argv`; `inherit` (if >= 0) becomes descriptor 10 in the child.
    explicit Program(const std::vector<std::string>& argv, int inherit = -1) {
        int in[2];
        int out[2];
        if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) {
            throw std::runtime_error("pipe failed");
        }
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_adddup2(&actions, in[0], 0);
        posix_spawn_file_actions_adddup2(&actions, out[1], 1);
        if (inherit >= 0) {
            posix_spawn_file_actions_adddup2(&actions, inherit, 10);
        }
        std::vector<char*> args;
        for (const auto& a : argv) {
            args.push_back(const_cast<char*>(a.c_str()));
        }
        args.push_back(nullptr);
        const int rc = ::posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ);
        posix_spawn_file_actions_destroy(&actions);
        ::close(in[0]);
        ::close(out[1]);
        go_ = in[1];
        out_ = out[0];
        if (rc != 0) {
            throw std::runtime_error(fmt::format("cannot start {}", argv[0]));
        }
    }
    ~Program() {
        if (go_ >= 0) {
            ::close(go_);
        }
        ::close(out_);
        if (pid_ > 0) {
            ::waitpid(pid_, nullptr, 0);
        }
    }
    Program(const Program&) = delete;
    Program& operator=(const Program&) = delete;

    [[nodiscard]] pid_t pid() const { return pid_; }
    void go() {
        if (::write(go_, "g", 1) != 1) {
            throw std::runtime_error("the program died before it started");
        }
        ::close(go_);
        go_ = -1;
    }
    /// Waits for the program; returns what it printed, or throws on a failure exit.
    std::string finish() {
        std::string text;
        char buf[256];
        for (ssize_t n; (n = ::read(out_, buf, sizeof(buf))) > 0;) {
            text.append(buf, static_cast<std::size_t>(n));
        }
        int status = 0;
        ::waitpid(pid_, &status, 0);
        pid_ = -1;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            throw std::runtime_error(fmt::format("the program failed (status {:#x}): {}", status, text));
        }
        return text;
    }

private:
    pid_t pid_ = -1;
    int go_ = -1;
    int out_ = -1;
};

}  // namespace strata::bench
