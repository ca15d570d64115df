// SPDX-License-Identifier: MIT
#include "progress.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fstream>

#include <fmt/format.h>

namespace strata::progress {

namespace {

constexpr auto redraw_interval = std::chrono::milliseconds(100);

std::string comm_of(pid_t pid) {
    std::ifstream in(fmt::format("/proc/{}/comm", pid));
    std::string name;
    std::getline(in, name);
    return name;
}

pid_t parent_of(pid_t pid) {
    // /proc/PID/stat: "pid (comm) state ppid ...", and comm may hold spaces or ')'.
    std::ifstream in(fmt::format("/proc/{}/stat", pid));
    const std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto close = stat.rfind(')');
    if (close == std::string::npos) return -1;
    char state = 0;
    int ppid = -1;
    if (std::sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid) != 2) return -1;
    return ppid;
}

// An MPI rank's stderr is a pipe to its hydra_pmi_proxy, which forwards what
// arrives to mpiexec's stderr: the rank's line reaches a terminal exactly when
// mpiexec's stderr is one. Only a rank on mpiexec's own node can tell (mpiexec
// is its grandparent); elsewhere the line stays off. Returns an fd on that
// terminal (for its width), or -1.
int mpiexec_terminal() {
    const pid_t proxy = ::getppid();
    if (comm_of(proxy) != "hydra_pmi_proxy") return -1;
    const pid_t launcher = parent_of(proxy);
    if (launcher <= 1) return -1;
    const std::string name = comm_of(launcher);
    if (!name.starts_with("mpiexec") && !name.starts_with("mpirun")) return -1;
    const int fd = ::open(fmt::format("/proc/{}/fd/2", launcher).c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (fd >= 0 && ::isatty(fd) == 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

void write_all(std::string_view bytes) {
    while (!bytes.empty()) {
        const ssize_t n = ::write(STDERR_FILENO, bytes.data(), bytes.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        bytes.remove_prefix(static_cast<std::size_t>(n));
    }
}

}  // namespace

Line::Line(Options options) : options_(std::move(options)) {
    if (!options_.enabled) return;
    if (::isatty(STDERR_FILENO) != 0) {
        terminal_fd_ = STDERR_FILENO;
    } else if (options_.through_mpiexec) {
        terminal_fd_ = mpiexec_terminal();
        own_fd_ = terminal_fd_ >= 0;
    }
}

Line::~Line() {
    clear();
    if (own_fd_) ::close(terminal_fd_);
}

void Line::show(std::string_view text) {
    if (!active()) return;
    std::lock_guard lock(mutex_);
    text_.assign(text);
    draw();
}

void Line::show(std::uint64_t done, std::uint64_t total, std::string_view label) {
    if (!active()) return;
    show(bar(done, total, label));
}

void Line::tick() {
    if (!active()) return;
    std::lock_guard lock(mutex_);
    draw();
}

void Line::clear() {
    if (!active()) return;
    std::lock_guard lock(mutex_);
    erase();
}

void Line::draw() {
    const auto now = std::chrono::steady_clock::now();
    if (now - start_ < options_.delay) return;
    if (drawn_columns_ != 0 && now - last_draw_ < redraw_interval) return;
    last_draw_ = now;
    std::string line = options_.prefix;
    if (!text_.empty()) line += (line.empty() ? "" : " ") + text_;
    const std::string suffix =
        options_.elapsed ? "  " + clock_text(std::chrono::duration_cast<std::chrono::seconds>(now - start_)) : "";
    winsize size{};
    const std::size_t width = ::ioctl(terminal_fd_, TIOCGWINSZ, &size) == 0 && size.ws_col > 1 ? size.ws_col : 80;
    // One column short of the width: a line that fills the last column wraps on
    // some terminals, and \r would then return to the wrong line. The text is
    // cut, not the time at its end.
    line = fit(line, width - 1 - std::min(width - 1, suffix.size())) + suffix;
    if (drawn_columns_ != 0 && line == drawn_) return;
    const std::size_t columns = columns_of(line);
    // Spaces over what is left of a longer earlier line; one write, so that
    // nothing another process writes lands inside the line.
    std::string out = "\r" + line + std::string(drawn_columns_ > columns ? drawn_columns_ - columns : 0, ' ');
    if (drawn_columns_ > columns) out += "\r" + line;
    std::fflush(stdout);  // what the command printed before comes before the line
    write_all(out);
    drawn_ = line;
    drawn_columns_ = std::max<std::size_t>(columns, 1);
}

void Line::erase() {
    if (drawn_columns_ == 0) return;
    write_all("\r" + std::string(drawn_columns_, ' ') + "\r");
    drawn_columns_ = 0;
}

std::string bar(std::uint64_t done, std::uint64_t total, std::string_view label, int width) {
    if (total == 0) return fmt::format("{} {}", done, label);
    const std::uint64_t shown = std::min(done, total);
    const auto filled = static_cast<std::size_t>(static_cast<double>(shown) / static_cast<double>(total) * width);
    return fmt::format("[{:<{}}] {}/{} {}", std::string(filled, '#'), width, shown, total, label);
}

std::size_t columns_of(std::string_view text) {
    return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) {
        return (static_cast<unsigned char>(c) & 0xC0U) != 0x80U;  // not a UTF-8 continuation byte
    }));
}

std::string fit(std::string_view text, std::size_t columns) {
    if (columns_of(text) <= columns) return std::string(text);
    if (columns < 3) return std::string(columns, '.');
    std::size_t kept = 0;
    std::size_t end = 0;
    for (; end < text.size(); ++end) {
        if ((static_cast<unsigned char>(text[end]) & 0xC0U) != 0x80U && kept++ == columns - 3) break;
    }
    return std::string(text.substr(0, end)) + "...";
}

std::string clock_text(std::chrono::seconds elapsed) {
    const auto s = elapsed.count();
    if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
    return fmt::format("{}:{:02}", s / 60, s % 60);
}

}  // namespace strata::progress
