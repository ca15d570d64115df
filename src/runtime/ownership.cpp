// SPDX-License-Identifier: MIT
// Whether the job owns its CPUs (ownership.hpp).
#include "ownership.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string_view>

#include <fmt/format.h>

#include "cpuset.hpp"

namespace strata::runtime::detail {

namespace {

std::string first_line(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
}

// The cpuset cgroup of the calling thread and the directory that holds its
// files: the v1 "cpuset" hierarchy if mounted, else the v2 unified one.
struct CpusetCgroup {
    std::string path;
    std::string dir;
    bool v2 = false;
};

std::optional<CpusetCgroup> cpuset_cgroup() {
    std::ifstream in("/proc/thread-self/cgroup");
    std::string line;
    std::optional<CpusetCgroup> unified;
    while (std::getline(in, line)) {
        // "ID:CONTROLLERS:PATH"; v2's line is "0::PATH".
        const auto first = line.find(':');
        const auto second = first == std::string::npos ? first : line.find(':', first + 1);
        if (second == std::string::npos) {
            continue;
        }
        const std::string_view controllers(line.data() + first + 1, second - first - 1);
        const std::string path = line.substr(second + 1);
        std::stringstream list{std::string(controllers)};
        for (std::string name; std::getline(list, name, ',');) {
            if (name == "cpuset") {
                return CpusetCgroup{path, "/sys/fs/cgroup/cpuset" + path, false};
            }
        }
        if (controllers.empty()) {
            unified = CpusetCgroup{path, "/sys/fs/cgroup" + path, true};
        }
    }
    return unified;
}

}  // namespace

CpuFacts read_cpu_facts() {
    CpuFacts facts;
    if (auto allowed = allowed_cpus()) {
        facts.allowed = std::move(*allowed);
    }
    if (auto online = parse_cpus(first_line("/sys/devices/system/cpu/online"), "online")) {
        facts.online = std::move(*online);
    }
    if (auto cgroup = cpuset_cgroup()) {
        facts.cpuset = cgroup->path;
        if (cgroup->v2) {
            const auto partition = first_line(cgroup->dir + "/cpuset.cpus.partition");
            facts.cpuset_exclusive = partition.starts_with("root") || partition.starts_with("isolated");
        } else {
            facts.cpuset_exclusive = first_line(cgroup->dir + "/cpuset.cpu_exclusive") == "1";
        }
    }
    return facts;
}

std::optional<std::string> owned_cores(const CpuFacts& facts) {
    // The root cpuset is exclusive by definition and says nothing of a job.
    if (facts.cpuset_exclusive && !facts.cpuset.empty() && facts.cpuset != "/") {
        return fmt::format("the job's cpuset {} is exclusive", facts.cpuset);
    }
    if (!facts.allowed.empty() && !facts.online.empty() && facts.allowed.size() < facts.online.size() &&
        std::includes(facts.online.begin(), facts.online.end(), facts.allowed.begin(), facts.allowed.end())) {
        return fmt::format("the job is bound to CPUs {} of the online {}", describe_cpus(facts.allowed),
                           describe_cpus(facts.online));
    }
    return std::nullopt;
}

}  // namespace strata::runtime::detail
