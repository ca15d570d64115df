// SPDX-License-Identifier: MIT
// Context, clock and names (common.hpp).
#include "common.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace strata::video {

const char* to_string(Role role) {
    switch (role) {
        case Role::input: return "input";
        case Role::output: return "output";
        case Role::worker: return "worker";
        case Role::server: return "server";
    }
    return "?";
}

const char* to_string(Kind kind) {
    switch (kind) {
        case Kind::ready: return "ready";
        case Kind::job: return "job";
        case Kind::stop: return "stop";
        case Kind::result: return "result";
        case Kind::info: return "info";
        case Kind::end: return "end";
        case Kind::complete: return "complete";
        case Kind::abort: return "abort";
        case Kind::fin: return "fin";
    }
    return "?";
}

double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double unix_s() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

double Context::elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string Context::who() const {
    std::string role_text = to_string(role);
    if (role == Role::worker) role_text += fmt::format(" {}", worker);
    return fmt::format("strata-video: rank {} ({}, node {})", rank, role_text, options.node);
}

namespace {

void append_log(const Options& options, int rank, const std::string& line) {
    if (options.log_dir.empty()) return;
    const std::string path = fmt::format("{}/rank{}.log", options.log_dir, rank);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) return;
    const std::string text = line + "\n";
    (void)!::write(fd, text.data(), text.size());
    ::close(fd);
}

}  // namespace

void Context::error(const std::string& message) const {
    const std::string line = fmt::format("{}: error: {}", who(), message);
    if (progress != nullptr) progress->clear();
    std::fprintf(stderr, "%s\n", line.c_str());
    std::fflush(stderr);
    append_log(options, rank, line);
}

void Context::note(const std::string& message) const {
    const std::string line = fmt::format("{}: {}", who(), message);
    if (const char* v = std::getenv("STRATA_VIDEO_VERBOSE"); v != nullptr && v[0] == '1') {
        if (progress != nullptr) progress->clear();
        std::fprintf(stderr, "%s\n", line.c_str());
    }
    append_log(options, rank, line);
}

void Context::started() const {
    note(fmt::format("started, pid {}", ::getpid()));
}

void Context::first_frame() {
    if (stats.first_frame_s >= 0) {
        return;
    }
    stats.first_frame_s = elapsed();
    note("first frame");
}

void Context::exit_now(int status) const {
    note(fmt::format("exiting with status {}", status));
    std::fflush(nullptr);
    if (status == 0) std::exit(0);
    std::_Exit(status);
}

Result<void> Context::write_stats(const std::string& extra_json) const {
    if (options.stats_dir.empty()) return {};
    nlohmann::json j = {
        {"impl", options.impl_name},
        {"rank", rank},
        {"size", size},
        {"role", to_string(role)},
        {"worker", worker},
        {"node", options.node},
        {"frames", stats.frames},
        {"busy_s", stats.busy_s},
        {"wait_s", stats.wait_s},
        {"total_s", stats.total_s},
        {"first_frame_s", stats.first_frame_s},
        {"first_decode_unix", stats.first_decode_unix},
        {"done_unix", stats.done_unix},
        {"messages_sent", stats.messages_sent},
        {"bytes_sent", stats.bytes_sent},
        {"messages_received", stats.messages_received},
        {"bytes_received", stats.bytes_received},
    };
    if (!extra_json.empty()) {
        j["extra"] = nlohmann::json::parse(extra_json, nullptr, false);
    }
    const std::string path = fmt::format("{}/rank{}.json", options.stats_dir, rank);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
        return make_sys_error(errno, "--stats={}: cannot create {}", options.stats_dir, path);
    }
    const std::string text = j.dump(1) + "\n";
    const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ::close(fd);
    if (!ok) return make_error(Errc::io_error, "--stats={}: cannot write {}", options.stats_dir, path);
    return {};
}

}  // namespace strata::video
