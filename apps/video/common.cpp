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

void Holders::sent(int worker) {
    const auto w = static_cast<std::size_t>(worker);
    if (unanswered_[w]++ == 0) since_[w] = now_s();
}

void Holders::heard(int worker) {
    unanswered_[static_cast<std::size_t>(worker)] = 0;
}

Result<void> Holders::check(const Context& ctx, int first_worker_rank) const {
    const double now = now_s();
    for (std::size_t w = 0; w < unanswered_.size(); ++w) {
        if (unanswered_[w] > 0 && now - since_[w] > ctx.options.timeout_ms / 1000.0) {
            return make_error(
                Errc::peer_dead,
                "worker {} ({}) holds {} frame{} and has not answered for {:.1f} s: it is dead or cut off", w,
                ctx.peer(static_cast<int>(w) + first_worker_rank), unanswered_[w], unanswered_[w] == 1 ? "" : "s",
                now - since_[w]);
        }
    }
    return {};
}

std::string Context::peer(int peer_rank) const {
    const auto i = static_cast<std::size_t>(peer_rank);
    if (peer_rank < 0 || i >= nodes.size() || nodes[i].empty()) return fmt::format("rank {}", peer_rank);
    return fmt::format("rank {} on node {}", peer_rank, nodes[i]);
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

void Context::warning(const std::string& message) const {
    const std::string line = fmt::format("{}: warning: {}", who(), message);
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
