// SPDX-License-Identifier: MIT
#include "cleanup.hpp"

#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>

#include <fmt/format.h>
#include <unistd.h>
#include <cstdlib>

namespace strata::bench {
namespace {

// Fixed storage so the handler never allocates: paths are copied in when
// registered and the count is published after the copy.
constexpr std::size_t max_entries = 64;
constexpr std::size_t max_path = 4096;
std::array<std::array<char, max_path>, max_entries> g_files{};
std::atomic<std::size_t> g_file_count{0};
std::array<char, max_path> g_dir{};
std::atomic<bool> g_has_dir{false};

constexpr std::array<int, 5> handled_signals{SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGBUS};

void remove_registered() noexcept {
    const std::size_t n = g_file_count.load();
    for (std::size_t i = 0; i < n; ++i) {
        if (g_files[i][0] != '\0') {
            ::unlink(g_files[i].data());
        }
    }
    if (g_has_dir.load()) {
        ::rmdir(g_dir.data());
    }
}

extern "C" void on_signal(int sig) {
    remove_registered();
    static constexpr char message[] = "\nstrata-bench-regions: interrupted; files and segments removed\n";
    [[maybe_unused]] const auto written = ::write(STDERR_FILENO, message, sizeof message - 1);
    std::signal(sig, SIG_DFL);
    std::raise(sig);
}

void copy_path(std::array<char, max_path>& to, const std::string& from) {
    if (from.size() >= max_path) {
        fmt::print(stderr, "strata-bench-regions: path too long to register: {}\n", from);
        std::abort();
    }
    std::memcpy(to.data(), from.c_str(), from.size() + 1);
}

void add_entry(const std::string& path) {
    const std::size_t index = g_file_count.load();
    if (index >= max_entries) {
        fmt::print(stderr, "strata-bench-regions: more than {} files to clean up\n", max_entries);
        std::abort();
    }
    copy_path(g_files[index], path);
    g_file_count.store(index + 1);
}

}  // namespace

Cleanup::Cleanup() {
    struct sigaction action {};
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    for (const int sig : handled_signals) {
        sigaddset(&action.sa_mask, sig);
    }
    for (const int sig : handled_signals) {
        sigaction(sig, &action, nullptr);
    }
}

Cleanup::~Cleanup() {
    remove_all();
}

Result<std::filesystem::path> Cleanup::make_work_dir(const std::filesystem::path& parent) {
    std::string pattern = (parent / "strata-bench-regions-XXXXXX").string();
    if (pattern.size() >= max_path) {
        return make_error(Errc::invalid_argument, "--dir={}: path too long", parent.string());
    }
    if (::mkdtemp(pattern.data()) == nullptr) {
        return make_sys_error(errno, "--dir={}: cannot create a work directory", parent.string());
    }
    copy_path(g_dir, pattern);
    g_has_dir.store(true);
    return std::filesystem::path(pattern);
}

std::filesystem::path Cleanup::file(const std::filesystem::path& path) {
    add_entry(path.string());
    return path;
}

std::string Cleanup::segment(const std::string& name) {
    add_entry("/dev/shm/" + name);
    return name;
}

void Cleanup::remove_all() noexcept {
    // Block the handled signals so the handler and this function never both run.
    sigset_t block;
    sigset_t previous;
    sigemptyset(&block);
    for (const int sig : handled_signals) {
        sigaddset(&block, sig);
    }
    sigprocmask(SIG_BLOCK, &block, &previous);
    remove_registered();
    g_file_count.store(0);
    g_has_dir.store(false);
    sigprocmask(SIG_SETMASK, &previous, nullptr);
}

}  // namespace strata::bench
