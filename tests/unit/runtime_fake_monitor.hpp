// SPDX-License-Identifier: MIT
// A blocking monitor whose ready counts the test sets, for scheduler tests
// that must not depend on BPF or /proc timing.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <memory>

#include "strata/runtime.hpp"

namespace strata::test {

class FakeMonitor final : public runtime::CoreMonitor {
public:
    FakeMonitor() {
        for (auto& r : ready_) r.store(1);
    }
    ~FakeMonitor() override {
        if (destroyed) destroyed->store(true);
    }
    void set_ready(int cpu, int value) { ready_[static_cast<std::size_t>(cpu)].store(value); }
    [[nodiscard]] int ready(int cpu) const noexcept override {
        if (on_ready) on_ready(cpu);
        return ready_[static_cast<std::size_t>(cpu)].load();
    }
    Result<void> register_worker(pid_t /*tid*/, int /*cpu*/) override {
        registered.fetch_add(1);
        return {};
    }
    void unregister_worker(pid_t /*tid*/) override { unregistered.fetch_add(1); }
    [[nodiscard]] std::string_view backend() const noexcept override { return "fake"; }
    [[nodiscard]] std::string_view reason() const noexcept override { return "set by the test"; }
    [[nodiscard]] runtime::MonitorCounters counters(int /*cpu*/) const override { return {}; }
    // Accepts the wakeup request (so the surrender and suspend cover
    // priorities start) but never calls back: the leader's scan, which reads
    // the counts the test sets, is what acts.
    bool notify_when_woken(int /*cpu*/) noexcept override { return reports_wakeups; }

    bool reports_wakeups = false;  // set before the runtime reads it (Runtime::start)
    // The runtime's callback, as a real monitor's event thread would call it.
    std::function<void(int)> callback;
    // Called at the start of every ready() (set it in fake_monitor's `configure`).
    std::function<void(int)> on_ready;
    // Set to true by the destructor: outlives the monitor, which the runtime owns.
    std::shared_ptr<std::atomic<bool>> destroyed;

    std::atomic<int> registered{0};
    std::atomic<int> unregistered{0};

private:
    std::array<std::atomic<int>, 1024> ready_;
};

/// A factory that hands the runtime `*out` (owned by the runtime; valid until it stops).
/// `configure` runs on the new monitor before the runtime sees it (hooks set there need no lock).
inline runtime::MonitorFactory fake_monitor(FakeMonitor** out, bool reports_wakeups = false,
                                            std::function<void(FakeMonitor&)> configure = {}) {
    return [out, reports_wakeups, configure](
               int, std::function<void(int)> callback) -> Result<std::unique_ptr<runtime::CoreMonitor>> {
        auto monitor = std::make_unique<FakeMonitor>();
        monitor->reports_wakeups = reports_wakeups;
        monitor->callback = std::move(callback);
        if (configure) configure(*monitor);
        *out = monitor.get();
        return monitor;
    };
}

}  // namespace strata::test
