// SPDX-License-Identifier: MIT
// The runtime's view of the blocking monitor (include/strata/monitor.hpp).
#include <string>

#include "strata/monitor.hpp"
#include "strata/runtime.hpp"

namespace strata::runtime {

namespace {

class OffMonitor final : public CoreMonitor {
public:
    explicit OffMonitor(std::string reason) : reason_(std::move(reason)) {}
    [[nodiscard]] int ready(int /*core*/) const noexcept override { return -1; }
    Result<void> register_worker(pid_t /*tid*/, int /*core*/) override { return {}; }
    void unregister_worker(pid_t /*tid*/) override {}
    [[nodiscard]] std::string_view backend() const noexcept override { return "off"; }
    [[nodiscard]] std::string_view reason() const noexcept override { return reason_; }
    [[nodiscard]] MonitorCounters counters(int /*core*/) const override { return {}; }

private:
    std::string reason_;
};

class BlockingMonitor final : public CoreMonitor {
public:
    explicit BlockingMonitor(std::unique_ptr<monitor::Monitor> monitor) : monitor_(std::move(monitor)) {}
    [[nodiscard]] int ready(int core) const noexcept override { return monitor_->ready(core); }
    Result<void> register_worker(pid_t tid, int core) override { return monitor_->register_worker(tid, core); }
    void unregister_worker(pid_t tid) override { monitor_->unregister_worker(tid); }
    [[nodiscard]] std::string_view backend() const noexcept override { return to_string(monitor_->backend()); }
    [[nodiscard]] std::string_view reason() const noexcept override { return monitor_->reason(); }
    bool notify_when_one_ready(int core) noexcept override { return monitor_->notify_when_one_ready(core); }
    bool notify_when_woken(int core) noexcept override { return monitor_->notify_when_woken(core); }
    bool set_standby(int core, pid_t tid) noexcept override { return monitor_->set_standby(core, tid); }
    [[nodiscard]] bool reports_empty_cores() const noexcept override { return true; }
    [[nodiscard]] MonitorCounters counters(int core) const override {
        const monitor::CoreStats s = monitor_->stats(core);
        return MonitorCounters{s.blocks,
                               s.unblocks,
                               std::chrono::nanoseconds(s.no_ready_ns),
                               std::chrono::nanoseconds(s.oversubscribed_ns),
                               s.oversubscribing_wakeups,
                               std::chrono::nanoseconds(s.oversubscribed_wait_ns),
                               s.woken_events,
                               std::chrono::nanoseconds(s.woken_event_latency_ns)};
    }

private:
    std::unique_ptr<monitor::Monitor> monitor_;
};

}  // namespace

MonitorFactory no_monitor() {
    return [](int, const std::function<void(int)>&) -> Result<std::unique_ptr<CoreMonitor>> {
        return std::make_unique<OffMonitor>("off by request");
    };
}

MonitorFactory monitor_from_env() {
    return [](int cores, const std::function<void(int)>& on_idle) -> Result<std::unique_ptr<CoreMonitor>> {
        auto options = monitor::options_from_env();
        if (!options) {
            return std::unexpected(options.error());
        }
        if (options->backend == monitor::Backend::off) {
            return std::make_unique<OffMonitor>(options->reason);
        }
        // One callback for both events: the runtime looks at the core either way.
        auto started = monitor::Monitor::start(*options, cores, on_idle, on_idle);
        if (!started) {
            return std::unexpected(started.error());
        }
        return std::make_unique<BlockingMonitor>(std::move(*started));
    };
}

}  // namespace strata::runtime
