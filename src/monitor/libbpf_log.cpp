// SPDX-License-Identifier: MIT
#include "libbpf_log.hpp"

#include <array>
#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <string_view>

#include <bpf/libbpf.h>

namespace strata::monitor::detail {

namespace {

std::mutex& warning_mutex() {
    static std::mutex mutex;
    return mutex;
}

std::string& first_warning_text() {
    static std::string message;
    return message;
}

[[gnu::format(printf, 2, 0)]] int capture(libbpf_print_level level, const char* format, va_list args) {
    if (level == LIBBPF_DEBUG) {
        return 0;
    }
    std::array<char, 512> buf{};
    const int n = std::vsnprintf(buf.data(), buf.size(), format, args);
    std::string_view line(buf.data());
    if (line.starts_with("libbpf: ")) {
        line.remove_prefix(8);
    }
    while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) {
        line.remove_suffix(1);
    }
    // The RLIMIT_MEMLOCK notice is advisory and precedes the actual cause.
    const std::scoped_lock lock(warning_mutex());
    if (level == LIBBPF_WARN && first_warning_text().empty() && !line.starts_with("Failed to bump RLIMIT_MEMLOCK")) {
        first_warning_text() = std::string(line);
    }
    return n;
}

}  // namespace

CaptureLibbpfWarnings::CaptureLibbpfWarnings() {
    {
        const std::scoped_lock lock(warning_mutex());
        first_warning_text().clear();
    }
    previous_ = reinterpret_cast<void*>(libbpf_set_print(capture));
}

CaptureLibbpfWarnings::~CaptureLibbpfWarnings() {
    libbpf_set_print(reinterpret_cast<libbpf_print_fn_t>(previous_));
}

std::string CaptureLibbpfWarnings::first_warning() const {
    const std::scoped_lock lock(warning_mutex());
    return first_warning_text();
}

std::string CaptureLibbpfWarnings::suffix() const {
    const std::string warning = first_warning();
    return warning.empty() ? std::string{} : " (libbpf: " + warning + ")";
}

}  // namespace strata::monitor::detail
