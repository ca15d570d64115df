// SPDX-License-Identifier: MIT
#include "machine.hpp"

#include <array>
#include <cerrno>
#include <ctime>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <nlohmann/json.hpp>

#include <linux/magic.h>

namespace strata::bench {
namespace {

std::string first_line(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
}

// A "Key: value kB" field of /proc/meminfo, in bytes.
std::uint64_t meminfo_bytes(std::string_view key) {
    std::ifstream in("/proc/meminfo");
    std::string name;
    std::uint64_t kib = 0;
    std::string unit;
    while (in >> name >> kib) {
        std::getline(in, unit);
        if (name.size() == key.size() + 1 && name.starts_with(key)) {
            return kib * 1024;
        }
    }
    return 0;
}

// The bracketed choice of a sysfs mode file: "always [madvise] never" -> "madvise".
std::string bracketed(const std::string& line) {
    const auto open = line.find('[');
    const auto close = line.find(']');
    if (open == std::string::npos || close == std::string::npos || close < open) {
        return line;
    }
    return line.substr(open + 1, close - open - 1);
}

}  // namespace

std::uint64_t mem_available() {
    return meminfo_bytes("MemAvailable");
}

Machine read_machine() {
    Machine m;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        m.cores = static_cast<unsigned>(CPU_COUNT(&set));
    }
    m.mem_total = meminfo_bytes("MemTotal");
    m.mem_available = mem_available();
    utsname names{};
    if (uname(&names) == 0) {
        m.kernel = names.release;
    }
    std::ifstream cpuinfo("/proc/cpuinfo");
    for (std::string line; std::getline(cpuinfo, line);) {
        if (line.starts_with("model name")) {
            const auto colon = line.find(':');
            if (colon != std::string::npos) {
                m.cpu_model = line.substr(colon + 2);
            }
            break;
        }
    }
    m.thp = bracketed(first_line("/sys/kernel/mm/transparent_hugepage/enabled"));
    const std::time_t now = std::time(nullptr);
    std::tm utc{};
    gmtime_r(&now, &utc);
    std::array<char, 32> text{};
    std::strftime(text.data(), text.size(), "%Y-%m-%dT%H:%M:%SZ", &utc);
    m.date_utc = text.data();
    return m;
}

Result<FsInfo> read_fs_info(const std::filesystem::path& dir) {
    struct statfs fs {};
    if (statfs(dir.c_str(), &fs) != 0) {
        return make_sys_error(errno, "--dir={}: statfs failed", dir.string());
    }
    struct stat st {};
    if (stat(dir.c_str(), &st) != 0) {
        return make_sys_error(errno, "--dir={}: stat failed", dir.string());
    }
    FsInfo info;
    const auto magic = static_cast<unsigned long>(fs.f_type);
    info.in_memory = magic == TMPFS_MAGIC || magic == RAMFS_MAGIC;
    // /proc/self/mountinfo: id parent major:minor root mount-point options ... - type source ...
    const std::string dev = fmt::format("{}:{}", major(st.st_dev), minor(st.st_dev));
    std::ifstream mountinfo("/proc/self/mountinfo");
    for (std::string line; std::getline(mountinfo, line);) {
        std::istringstream fields(line);
        std::string id, parent, majmin, root, mount_point;
        fields >> id >> parent >> majmin >> root >> mount_point;
        if (majmin != dev) {
            continue;
        }
        // Several mounts can share a device (bind mounts); keep the longest
        // mount point that is a prefix of the directory.
        if (!dir.string().starts_with(mount_point) || mount_point.size() < info.mount_point.size()) {
            continue;
        }
        const auto dash = line.find(" - ");
        if (dash == std::string::npos) {
            continue;
        }
        std::istringstream tail(line.substr(dash + 3));
        info.mount_point = mount_point;
        tail >> info.type >> info.device;
    }
    if (info.type.empty()) {
        info.type = info.in_memory ? "tmpfs" : fmt::format("magic 0x{:x}", magic);
    }
    info.rotational = first_line(fmt::format("/sys/dev/block/{}/queue/rotational", dev));
    if (info.rotational.empty()) {
        // A partition: the queue belongs to the whole disk one level up.
        info.rotational = first_line(fmt::format("/sys/dev/block/{}/../queue/rotational", dev));
    }
    return info;
}

void to_json(nlohmann::json& j, const FsInfo& fs) {
    j = {{"type", fs.type},
         {"device", fs.device},
         {"mount_point", fs.mount_point},
         {"rotational", fs.rotational},
         {"in_memory", fs.in_memory}};
}

void to_json(nlohmann::json& j, const Machine& m) {
    j = {{"cores", m.cores},      {"mem_total", m.mem_total}, {"mem_available", m.mem_available},
         {"kernel", m.kernel},    {"cpu_model", m.cpu_model}, {"thp", m.thp},
         {"date_utc", m.date_utc}};
}

}  // namespace strata::bench
