// The runtime's view of the blocking monitor (strata::monitor when it is in
// the build; otherwise only `off`).
#include <cstdlib>
#include <string>

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

}  // namespace

MonitorFactory no_monitor() {
    return [](int, std::function<void(int)>) -> Result<std::unique_ptr<CoreMonitor>> {
        return std::make_unique<OffMonitor>("off by request");
    };
}

MonitorFactory monitor_from_env() {
    return [](int, std::function<void(int)>) -> Result<std::unique_ptr<CoreMonitor>> {
        const char* value = std::getenv("STRATA_MONITOR");
        const std::string text = value != nullptr ? value : "auto";
        if (text == "off") {
            return std::make_unique<OffMonitor>("STRATA_MONITOR=off");
        }
        if (text == "auto" || text.empty()) {
            return std::make_unique<OffMonitor>("auto: this build has no blocking monitor (src/monitor)");
        }
        return make_error(Errc::unsupported, "STRATA_MONITOR={}: this build has no blocking monitor (src/monitor)",
                          text);
    };
}

}  // namespace strata::runtime
