// SPDX-License-Identifier: MIT
// exit_on_hydra_notice (hydra_notice.hpp).
#include "hydra_notice.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>

#include <fmt/format.h>

namespace strata::video {

namespace {

char g_text[512];
std::size_t g_length = 0;
int g_log_fd = -1;
char g_remove[4096];
volatile std::sig_atomic_t g_remove_set = 0;

void on_notice(int) {
    if (g_remove_set != 0) ::unlink(g_remove);
    (void)!::write(STDERR_FILENO, g_text, g_length);
    if (g_log_fd >= 0) (void)!::write(g_log_fd, g_text, g_length);
    ::_exit(1);
}

}  // namespace

void exit_on_hydra_notice(const Context& ctx) {
    const std::string text = fmt::format(
        "{}: error: peer_dead: mpiexec reports that a rank of the job died (SIGUSR1 from hydra)\n{}: exiting with "
        "status 1\n",
        ctx.who(), ctx.who());
    g_length = std::min(text.size(), sizeof g_text);
    std::memcpy(g_text, text.data(), g_length);
    if (!ctx.options.log_dir.empty()) {
        const std::string path = fmt::format("{}/rank{}.log", ctx.options.log_dir, ctx.rank);
        g_log_fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);
    }
    struct sigaction sa {};
    sa.sa_handler = on_notice;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGUSR1, &sa, nullptr);
    ::signal(SIGPIPE, SIG_IGN);
}

void remove_on_hydra_notice(const std::string& path) {
    g_remove_set = 0;
    const std::size_t n = std::min(path.size(), sizeof g_remove - 1);
    std::memcpy(g_remove, path.data(), n);
    g_remove[n] = '\0';
    g_remove_set = 1;
}

void keep_on_hydra_notice() {
    g_remove_set = 0;
}

}  // namespace strata::video
