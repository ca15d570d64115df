// SPDX-License-Identifier: MIT
// Backend proc: where BPF is not permitted, a sampler thread reads
// /proc/self/task/<tid>/stat of every registered worker each period. State S
// (sleeping) or D (uninterruptible, usually I/O) is blocked; anything else is
// ready. It sees only what is still true at a sample: a block shorter than the
// period may go unnoticed, which is the price of needing no privilege.
#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "backends.hpp"
#include "core_counters.hpp"

namespace strata::monitor::detail {

namespace {

// voluntary_ctxt_switches + nonvoluntary_ctxt_switches of one thread, or 0.
std::uint64_t context_switches_of(pid_t tid) {
    std::ifstream in(fmt::format("/proc/self/task/{}/status", tid));
    std::string key;
    std::uint64_t value = 0;
    std::uint64_t total = 0;
    while (in >> key) {
        if (key == "voluntary_ctxt_switches:" || key == "nonvoluntary_ctxt_switches:") {
            if (in >> value) {
                total += value;
            }
        }
    }
    return total;
}

// The state letter from an open stat file, re-read from offset 0; 0 when the
// thread is gone.
char read_state(int fd) noexcept {
    std::array<char, 512> buf{};
    const auto n = ::pread(fd, buf.data(), buf.size() - 1, 0);
    if (n <= 0) {
        return 0;
    }
    const std::string_view text(buf.data(), static_cast<std::size_t>(n));
    const auto close_paren = text.rfind(')');
    if (close_paren == std::string_view::npos || close_paren + 2 >= text.size()) {
        return 0;
    }
    return text[close_paren + 2];
}

class ProcMonitor final : public Monitor {
public:
    ProcMonitor(const Options& options, int cores, Callback callback)
        : Monitor(Backend::proc, options.reason, cores),
          period_(options.proc_period),
          threshold_ns_(static_cast<std::uint64_t>(options.threshold.count())),
          callback_(std::move(callback)),
          counters_(cores),
          empty_since_(static_cast<std::size_t>(cores), 0),
          finished_switches_(static_cast<std::size_t>(cores), 0) {
        set_ready_counters(counters_.ready_base(), CoreCounters::stride());
        thread_ = std::thread([this] { run(); });
    }

    ~ProcMonitor() override {
        {
            const std::scoped_lock lock(mutex_);
            stop_ = true;
        }
        wake_.notify_all();
        thread_.join();
        for (auto& [tid, worker] : workers_) {
            ::close(worker.fd);
        }
    }

private:
    struct Worker {
        int core;
        int fd;
        bool blocked;
        std::uint64_t switches_at_register;
    };

    Result<void> do_register(pid_t tid, int core, bool blocked) override {
        const auto path = fmt::format("/proc/self/task/{}/stat", tid);
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            return make_sys_error(errno, "Monitor::register_worker: tid={}: open {}", tid, path);
        }
        const std::scoped_lock lock(mutex_);
        if (workers_.contains(tid)) {
            ::close(fd);
            return make_error(Errc::already_exists, "Monitor::register_worker: tid={}: already registered", tid);
        }
        workers_.emplace(tid, Worker{core, fd, blocked, context_switches_of(tid)});
        if (!blocked) {
            counters_.change(core, +1);
        }
        return {};
    }

    void do_unregister(pid_t tid) override {
        // A worker unregisters itself: were it to sleep on mutex_ while the
        // sampler holds it, the sampler would read state S and report a block
        // (and a core without a ready worker) that the monitor itself caused.
        // So it spins for the lock instead of sleeping in the kernel.
        while (!mutex_.try_lock()) {
            std::this_thread::yield();
        }
        const std::scoped_lock lock(std::adopt_lock, mutex_);
        const auto it = workers_.find(tid);
        if (it == workers_.end()) {
            return;
        }
        forget(it);
    }

    // Under mutex_: drops a worker, keeping its context switches for stats.
    void forget(std::unordered_map<pid_t, Worker>::iterator it) {
        auto& worker = it->second;
        const auto now_switches = context_switches_of(it->first);
        if (now_switches >= worker.switches_at_register) {
            finished_switches_[static_cast<std::size_t>(worker.core)] += now_switches - worker.switches_at_register;
        }
        if (!worker.blocked) {
            counters_.change(worker.core, -1);
        }
        ::close(worker.fd);
        workers_.erase(it);
    }

    CoreStats do_stats(int core) const override {
        auto stats = counters_.stats(core);
        const std::scoped_lock lock(mutex_);
        std::uint64_t switches = finished_switches_[static_cast<std::size_t>(core)];
        for (const auto& [tid, worker] : workers_) {
            if (worker.core != core) {
                continue;
            }
            const auto now_switches = context_switches_of(tid);
            if (now_switches >= worker.switches_at_register) {
                switches += now_switches - worker.switches_at_register;
            }
        }
        stats.context_switches = switches;
        return stats;
    }

    // One pass over the workers; returns the cores to call back for.
    std::vector<int> sample() {
        std::vector<int> due;
        const std::scoped_lock lock(mutex_);
        const auto now = monotonic_ns();
        for (auto it = workers_.begin(); it != workers_.end();) {
            auto& worker = it->second;
            const char state = read_state(worker.fd);
            if (state == 0 || state == 'Z' || state == 'X') {
                // Exited without unregistering: it is no longer a ready worker.
                auto next = std::next(it);
                forget(it);
                it = next;
                continue;
            }
            const bool blocked = is_blocked_state(state);
            if (blocked != worker.blocked) {
                worker.blocked = blocked;
                const auto core = static_cast<std::size_t>(worker.core);
                if (blocked) {
                    counters_.count_block(worker.core);
                    if (counters_.change(worker.core, -1) == 0) {
                        empty_since_[core] = now;
                    }
                } else {
                    counters_.count_unblock(worker.core);
                    counters_.change(worker.core, +1);
                    empty_since_[core] = 0;
                }
            }
            ++it;
        }
        for (int c = 0; c < cores(); ++c) {
            auto& since = empty_since_[static_cast<std::size_t>(c)];
            if (since != 0 && ready(c) <= 0 && now - since >= threshold_ns_) {
                since = 0;
                due.push_back(c);
            }
        }
        return due;
    }

    void run() {
        auto next = std::chrono::steady_clock::now();
        for (;;) {
            for (const int core : sample()) {
                counters_.count_callback(core);
                callback_(core);
            }
            next += period_;
            const auto now = std::chrono::steady_clock::now();
            // After a long stall, sample again at once rather than catching up.
            if (next < now) {
                next = now;
            }
            std::unique_lock lock(mutex_);
            if (wake_.wait_until(lock, next, [this] { return stop_; })) {
                return;
            }
        }
    }

    std::chrono::microseconds period_;
    std::uint64_t threshold_ns_;
    Callback callback_;
    CoreCounters counters_;
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    bool stop_ = false;
    std::unordered_map<pid_t, Worker> workers_;
    std::vector<std::uint64_t> empty_since_;        // only the sampler thread touches it
    std::vector<std::uint64_t> finished_switches_;  // under mutex_
    std::thread thread_;
};

}  // namespace

Result<std::unique_ptr<Monitor>> start_proc(const Options& options, int cores, Monitor::Callback callback) {
    if (thread_state(::gettid()) == 0) {
        return make_error(Errc::unsupported,
                          "Monitor::start: backend=proc: /proc/self/task/<tid>/stat is not "
                          "readable (is /proc mounted?)");
    }
    return std::make_unique<ProcMonitor>(options, cores, std::move(callback));
}

}  // namespace strata::monitor::detail
