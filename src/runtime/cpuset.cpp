// SPDX-License-Identifier: MIT
// CPU lists (cpuset.hpp).
#include "cpuset.hpp"

#include <pthread.h>
#include <sched.h>
#include <algorithm>
#include <cerrno>
#include <charconv>

#include <fmt/format.h>

namespace strata::runtime {

Result<std::vector<int>> allowed_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (::sched_getaffinity(0, sizeof(set), &set) != 0) {
        return make_sys_error(errno, "Runtime: sched_getaffinity");
    }
    std::vector<int> cpus;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (CPU_ISSET(static_cast<std::size_t>(cpu), &set)) {
            cpus.push_back(cpu);
        }
    }
    if (cpus.empty()) {
        return make_error(Errc::internal, "Runtime: sched_getaffinity returned no CPU");
    }
    return cpus;
}

int bind_this_thread(const std::vector<int>& cpus) noexcept {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (const int cpu : cpus) {
        CPU_SET(static_cast<std::size_t>(cpu), &set);
    }
    return ::pthread_setaffinity_np(::pthread_self(), sizeof(set), &set);
}

Result<std::vector<int>> validate_cpus(std::vector<int> cpus) {
    auto allowed = allowed_cpus();
    if (!allowed) {
        return allowed;
    }
    std::sort(cpus.begin(), cpus.end());
    cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
    for (int cpu : cpus) {
        if (!std::binary_search(allowed->begin(), allowed->end(), cpu)) {
            return make_error(Errc::invalid_argument, "Runtime: cpus: cpu {} is not in the allowed set {}", cpu,
                              describe_cpus(*allowed));
        }
    }
    return cpus;
}

Result<std::vector<int>> parse_cpus(std::string_view text, std::string_view param) {
    std::vector<int> cpus;
    auto bad = [&](std::string_view why) {
        return make_error(Errc::invalid_argument, "{}={}: {} (expected a list like 0-3,6)", param, text, why);
    };
    std::size_t begin = 0;
    while (begin <= text.size()) {
        const std::size_t end = std::min(text.find(',', begin), text.size());
        const std::string_view item = text.substr(begin, end - begin);
        const std::size_t dash = item.find('-');
        int first = 0;
        int last = 0;
        const std::string_view a = item.substr(0, dash);
        const std::string_view b = dash == std::string_view::npos ? a : item.substr(dash + 1);
        if (std::from_chars(a.data(), a.data() + a.size(), first).ec != std::errc{} ||
            std::from_chars(b.data(), b.data() + b.size(), last).ec != std::errc{} || a.empty() || b.empty()) {
            return bad(fmt::format("'{}' is not a CPU number or range", item));
        }
        if (first < 0 || last < first || last >= CPU_SETSIZE) {
            return bad(fmt::format("'{}' is not a valid range", item));
        }
        for (int cpu = first; cpu <= last; ++cpu) {
            cpus.push_back(cpu);
        }
        begin = end + 1;
    }
    return cpus;
}

std::string describe_cpus(const std::vector<int>& cpus) {
    std::string out;
    for (std::size_t i = 0; i < cpus.size();) {
        std::size_t j = i;
        while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) {
            ++j;
        }
        out += fmt::format("{}{}", out.empty() ? "" : ",", cpus[i]);
        if (j > i) {
            out += fmt::format("-{}", cpus[j]);
        }
        i = j + 1;
    }
    return out;
}

}  // namespace strata::runtime
