// SPDX-License-Identifier: MIT
// Backend off: the baseline. Ready counts are the registered workers of each
// core, whatever they do; it never calls back.
#include <mutex>
#include <unordered_map>

#include "backends.hpp"
#include "core_counters.hpp"

namespace strata::monitor::detail {

namespace {

class OffMonitor final : public Monitor {
public:
    OffMonitor(const Options& options, int cores) : Monitor(Backend::off, options.reason, cores), counters_(cores) {
        set_ready_counters(counters_.ready_base(), CoreCounters::stride());
    }

private:
    Result<void> do_register(pid_t tid, int core, bool /*blocked*/) override {
        const std::scoped_lock lock(mutex_);
        if (!workers_.emplace(tid, core).second) {
            return make_error(Errc::already_exists, "Monitor::register_worker: tid={}: already registered", tid);
        }
        counters_.change(core, +1);
        return {};
    }

    void do_unregister(pid_t tid) override {
        const std::scoped_lock lock(mutex_);
        const auto it = workers_.find(tid);
        if (it == workers_.end()) {
            return;
        }
        counters_.change(it->second, -1);
        workers_.erase(it);
    }

    CoreStats do_stats(int core) const override { return counters_.stats(core); }

    CoreCounters counters_;
    std::mutex mutex_;
    std::unordered_map<pid_t, int> workers_;
};

}  // namespace

Result<std::unique_ptr<Monitor>> start_off(const Options& options, int cores) {
    return std::make_unique<OffMonitor>(options, cores);
}

}  // namespace strata::monitor::detail
