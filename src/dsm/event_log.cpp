// SPDX-License-Identifier: MIT
#include "dsm/event_log.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include <fmt/format.h>

namespace strata::dsm {

EventLog::EventLog(std::size_t capacity)
    : start_(std::chrono::steady_clock::now()), capacity_(capacity), events_(std::make_unique<Event[]>(capacity)) {}

std::int64_t EventLog::now() const noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_).count();
}

void EventLog::record(bool sent, int peer, const wire::Header& header, std::int64_t at) noexcept {
    const std::uint64_t slot = next_.fetch_add(1, std::memory_order_relaxed);
    if (slot >= capacity_) {
        return;  // counted as dropped
    }
    Event& e = events_[slot];
    e.ns = at;
    e.header = header;
    e.peer = peer;
    e.sent = sent;
}

std::uint64_t EventLog::recorded() const noexcept {
    return std::min<std::uint64_t>(next_.load(std::memory_order_acquire), capacity_);
}

std::uint64_t EventLog::dropped() const noexcept {
    const std::uint64_t all = next_.load(std::memory_order_acquire);
    return all > capacity_ ? all - capacity_ : 0;
}

Result<void> EventLog::write(const std::string& path, const std::string& who) const {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        return make_sys_error(errno, "dsm: event_log={}: cannot create it{}", path,
                              errno == EEXIST ? " (it exists: the log never replaces a file)" : "");
    }
    // The join's steady_clock time (CLOCK_MONOTONIC, shared by every process of one machine) lets
    // the logs of ranks on one machine be put on one time line (scripts/dsm-event-latency).
    const auto joined = std::chrono::duration_cast<std::chrono::nanoseconds>(start_.time_since_epoch()).count();
    std::string text = fmt::format(
        "# strata dsm event log: {}, {} events, {} dropped, joined at {} ns monotonic\n# t_us dir kind peer "
        "client chunk version size\n",
        who, recorded(), dropped(), joined);
    const std::uint64_t n = recorded();
    constexpr std::size_t flush_at = std::size_t{1} << 20;
    auto put = [&](bool last) -> bool {
        if (!last && text.size() < flush_at) {
            return true;
        }
        std::size_t done = 0;
        while (done < text.size()) {
            const ssize_t w = ::write(fd, text.data() + done, text.size() - done);
            if (w < 0 && errno == EINTR) {
                continue;
            }
            if (w <= 0) {
                return false;
            }
            done += static_cast<std::size_t>(w);
        }
        text.clear();
        return true;
    };
    bool ok = true;
    for (std::uint64_t i = 0; i < n && ok; ++i) {
        const Event& e = events_[i];
        fmt::format_to(std::back_inserter(text), "{:.3f} {} {} {} {} {:#x} {} {}\n", static_cast<double>(e.ns) / 1e3,
                       e.sent ? "sent" : "recv", wire::kind_name(e.header.kind), e.peer, e.header.client,
                       e.header.chunk, e.header.version, e.header.size);
        ok = put(false);
    }
    ok = ok && put(true);
    const int err = errno;
    ::close(fd);
    if (!ok) {
        return make_sys_error(err, "dsm: event_log={}: cannot write it", path);
    }
    return {};
}

std::string event_log_path(const std::string& pattern, int rank) {
    std::string out;
    for (std::size_t i = 0; i < pattern.size(); ++i) {
        if (pattern[i] == '%' && i + 1 < pattern.size() && pattern[i + 1] == 'r') {
            out += std::to_string(rank);
            ++i;
        } else {
            out += pattern[i];
        }
    }
    return out;
}

}  // namespace strata::dsm
