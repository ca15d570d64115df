// SPDX-License-Identifier: MIT
// Monitor: argument checks shared by every backend, and the dispatch to them.
#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <ctime>
#include <string>

#include <fmt/format.h>

#include "backends.hpp"
#include "core/log.hpp"

namespace strata::monitor {

namespace detail {

std::uint64_t monotonic_ns() noexcept {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000U + static_cast<std::uint64_t>(ts.tv_nsec);
}

char thread_state(pid_t tid) noexcept {
    std::array<char, 64> path{};
    std::snprintf(path.data(), path.size(), "/proc/self/task/%d/stat", static_cast<int>(tid));
    const int fd = ::open(path.data(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return 0;
    }
    std::array<char, 512> buf{};
    const auto n = ::read(fd, buf.data(), buf.size() - 1);
    ::close(fd);
    if (n <= 0) {
        return 0;
    }
    // The command name (field 2) is in parentheses and may itself contain
    // ") ", so the state is the first field after the last ')'.
    const std::string_view text(buf.data(), static_cast<std::size_t>(n));
    const auto close_paren = text.rfind(')');
    if (close_paren == std::string_view::npos || close_paren + 2 >= text.size()) {
        return 0;
    }
    return text[close_paren + 2];
}

}  // namespace detail

std::string_view to_string(Backend backend) noexcept {
    switch (backend) {
        case Backend::off: return "off";
        case Backend::proc: return "proc";
        case Backend::ebpf: return "ebpf";
    }
    return "unknown";
}

Result<std::unique_ptr<Monitor>> Monitor::start(const Options& options, int cores,
                                                Callback on_core_without_ready_worker, Callback on_core_settled) {
    if (cores < 1) {
        return make_error(Errc::invalid_argument, "Monitor::start: cores={}: must be at least 1", cores);
    }
    if (options.threshold.count() < 0) {
        return make_error(Errc::invalid_argument, "Monitor::start: threshold={}ns: must not be negative",
                          options.threshold.count());
    }
    if (options.backend == Backend::proc && options.proc_period.count() <= 0) {
        return make_error(Errc::invalid_argument, "Monitor::start: proc_period={}us: must be positive",
                          options.proc_period.count());
    }
    if (!on_core_without_ready_worker) {
        on_core_without_ready_worker = [](int) {};
    }
    switch (options.backend) {
        case Backend::off: return detail::start_off(options, cores);
        case Backend::proc: return detail::start_proc(options, cores, std::move(on_core_without_ready_worker));
        case Backend::ebpf:
            if (!on_core_settled) {
                on_core_settled = [](int) {};
            }
            return detail::start_ebpf(options, cores, std::move(on_core_without_ready_worker),
                                      std::move(on_core_settled));
    }
    return make_error(Errc::invalid_argument, "Monitor::start: backend={}: unknown", static_cast<int>(options.backend));
}

Monitor::~Monitor() = default;

Result<void> Monitor::register_worker(pid_t tid, int core) {
    if (core < 0 || core >= cores_) {
        return make_error(Errc::invalid_argument, "Monitor::register_worker: core={}: out of range [0, {})", core,
                          cores_);
    }
    const char state = detail::thread_state(tid);
    if (state == 0) {
        return make_error(Errc::invalid_argument, "Monitor::register_worker: tid={}: not a thread of this process",
                          tid);
    }
    return do_register(tid, core, detail::is_blocked_state(state));
}

void Monitor::unregister_worker(pid_t tid) {
    do_unregister(tid);
}

CoreStats Monitor::stats(int core) const {
    if (core < 0 || core >= cores_) {
        return {};
    }
    return do_stats(core);
}

}  // namespace strata::monitor
