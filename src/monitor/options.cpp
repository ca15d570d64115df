// SPDX-License-Identifier: MIT
// STRATA_MONITOR* environment variables, and what auto picks.
#include <charconv>
#include <cstdlib>
#include <mutex>
#include <string>
#include <string_view>

#include "backends.hpp"
#include "core/log.hpp"

namespace strata::monitor {

namespace {

std::string_view env(const char* name) {
    const char* value = std::getenv(name);
    return value == nullptr ? std::string_view{} : std::string_view(value);
}

// A decimal integer in [min, max], or an error naming the variable.
Result<long long> env_integer(const char* name, long long fallback, long long min, long long max) {
    const auto text = env(name);
    if (text.empty()) {
        return fallback;
    }
    long long value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size()) {
        return make_error(Errc::invalid_argument, "{}={}: not a decimal integer", name, text);
    }
    if (value < min || value > max) {
        return make_error(Errc::invalid_argument, "{}={}: must be in [{}, {}]", name, text, min, max);
    }
    return value;
}

}  // namespace

Options choose_auto() {
    static std::once_flag once;
    static Options chosen;
    std::call_once(once, [] {
        if (auto loaded = detail::probe_ebpf()) {
            chosen.backend = Backend::ebpf;
            chosen.reason = "auto: ebpf, " + *loaded;
        } else {
            chosen.backend = Backend::proc;
            chosen.reason = "auto: proc, because the BPF monitor cannot load: " + loaded.error().message;
        }
    });
    return chosen;
}

Result<Options> options_from_env() {
    Options options;
    const auto name = env("STRATA_MONITOR");
    if (name.empty() || name == "auto") {
        options = choose_auto();
        // The one line that says why the cheaper, exact backend is not used.
        static std::once_flag warned;
        if (options.backend == Backend::proc) {
            std::call_once(warned, [&] { strata::detail::log().warn("monitor: {}", options.reason); });
        }
    } else if (name == "ebpf") {
        options.backend = Backend::ebpf;
    } else if (name == "proc") {
        options.backend = Backend::proc;
    } else if (name == "off") {
        options.backend = Backend::off;
    } else {
        return make_error(Errc::invalid_argument, "STRATA_MONITOR={}: not one of auto, ebpf, proc, off", name);
    }
    if (!name.empty() && name != "auto") {
        options.reason = "STRATA_MONITOR=" + std::string(name);
    }

    // Upper bounds keep the nanosecond conversions far from overflow.
    const auto threshold = env_integer("STRATA_MONITOR_THRESHOLD_US", 0, 0, 3'600'000'000LL);
    if (!threshold) {
        return std::unexpected(threshold.error());
    }
    options.threshold = std::chrono::microseconds(*threshold);
    const auto period = env_integer("STRATA_MONITOR_PERIOD_US", 1000, 10, 60'000'000LL);
    if (!period) {
        return std::unexpected(period.error());
    }
    options.proc_period = std::chrono::microseconds(*period);
    return options;
}

}  // namespace strata::monitor
