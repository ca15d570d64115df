// SPDX-License-Identifier: MIT
// cgroup-cpu, cgroup-memory, cgroup-blkio, cgroup-cpuset: the controllers the
// benchmarks use to pin CPU shares, memory limits, I/O throttles and exclusive
// cores (the job cpuset that lets the automatic cover priority stand by) on
// the processes they compare.
//
// For each controller: find its hierarchy in /proc/self/mountinfo (a v1 mount
// with the controller among its options, or the v2 unified mount listing it in
// cgroup.controllers), create a uniquely named child cgroup, write a harmless
// value to one of its files (or read it, for files whose syntax needs a
// device), and remove the child again.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "probe.hpp"
#include "system.hpp"

namespace strata::doctor {

namespace {

struct Controller {
    const char* capability;
    const char* v1_name;
    const char* v2_name;
    const char* v1_file;
    const char* v1_value;  ///< written and read back; nullptr: only read the file
    const char* v2_file;
    const char* v2_value;
};

// 512 shares / weight 50 and a 256 MiB limit only matter to tasks in the
// child, and the child never has any. The throttle files need a device
// number to write, so they are only read.
constexpr std::array<Controller, 4> kControllers{{
    {"cgroup-cpu", "cpu", "cpu", "cpu.shares", "512", "cpu.weight", "50"},
    {"cgroup-memory", "memory", "memory", "memory.limit_in_bytes", "268435456", "memory.max", "268435456"},
    {"cgroup-blkio", "blkio", "io", "blkio.throttle.read_bps_device", nullptr, "io.max", nullptr},
    {"cgroup-cpuset", "cpuset", "cpuset", "cpuset.cpu_exclusive", nullptr, "cpuset.cpus.partition", nullptr},
}};

struct Hierarchy {
    std::string path;
    bool v2 = false;
};

bool has_token(const std::string& list, char separator, std::string_view token) {
    std::stringstream items(list);
    for (std::string item; std::getline(items, item, separator);)
        if (item == token) return true;
    return false;
}

std::optional<Hierarchy> find_hierarchy(const Controller& controller) {
    std::optional<Hierarchy> unified;
    std::ifstream mountinfo("/proc/self/mountinfo");
    for (std::string line; std::getline(mountinfo, line);) {
        const auto dash = line.find(" - ");
        if (dash == std::string::npos) continue;
        std::istringstream left(line.substr(0, dash));
        std::istringstream right(line.substr(dash + 3));
        std::string id, parent, dev, root, mount_point, fstype, source, options;
        left >> id >> parent >> dev >> root >> mount_point;
        right >> fstype >> source >> options;
        const auto path = unescape_mount_field(mount_point);
        if (fstype == "cgroup" && has_token(options, ',', controller.v1_name)) return Hierarchy{path, false};
        if (fstype == "cgroup2" && !unified) {
            std::ifstream available(path + "/cgroup.controllers");
            std::string names;
            std::getline(available, names);
            if (has_token(names, ' ', controller.v2_name)) unified = Hierarchy{path, true};
        }
    }
    return unified;
}

std::string read_first_line(const std::string& file, int& err) {
    const UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
    std::array<char, 256> buf{};
    const ssize_t n = fd.valid() ? ::read(fd.get(), buf.data(), buf.size() - 1) : -1;
    err = n < 0 ? errno : 0;
    return n < 0 ? std::string{} : first_line(buf.data());
}

// Writes (or reads) the controller's file in `dir`. Empty on success.
std::string exercise_child(const std::string& dir, const char* file, const char* value, std::string& done) {
    const auto path = dir + "/" + file;
    int err = 0;
    if (value != nullptr) {
        const UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
        const std::string_view text(value);
        if (!fd.valid() || ::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
            return fmt::format("write {}={}: {}", file, value, errno_text(errno));
        const auto readback = read_first_line(path, err);
        if (err != 0) return fmt::format("read {}: {}", file, errno_text(err));
        if (readback != text) return fmt::format("{} reads {} after writing {}", file, readback, value);
        done = fmt::format("took {}={}", file, value);
        return {};
    }
    read_first_line(path, err);
    if (err != 0) return fmt::format("read {}: {}", file, errno_text(err));
    done = fmt::format("has a readable {}", file);
    return {};
}

Capability probe_controller(const Controller& controller) {
    Capability cap(controller.capability, false);
    const auto hierarchy = find_hierarchy(controller);
    if (!hierarchy) {
        cap.detail = fmt::format("no cgroup v1 mount with {} and no cgroup v2 mount offering {}", controller.v1_name,
                                 controller.v2_name);
        cap.fix = fmt::format("mkdir -p /sys/fs/cgroup/{0} && mount -t cgroup -o {0} cgroup /sys/fs/cgroup/{0}",
                              controller.v1_name);
        return cap;
    }
    const auto where = fmt::format("v{} at {}", hierarchy->v2 ? 2 : 1, hierarchy->path);
    const auto dir = hierarchy->path + "/" + unique_name("cgroup");
    if (::mkdir(dir.c_str(), 0755) != 0) {
        const int err = errno;
        cap.detail = fmt::format("{}, mkdir {}: {}", where, dir, errno_text(err));
        cap.fix = err == EROFS
                      ? fmt::format("mount {} read-write (containers: --cgroupns=host --privileged)", hierarchy->path)
                      : fmt::format("run as root, or delegate {} to this user", hierarchy->path);
        return cap;
    }
    ScopeExit remove([&dir] { ::rmdir(dir.c_str()); });

    const char* file = hierarchy->v2 ? controller.v2_file : controller.v1_file;
    const char* value = hierarchy->v2 ? controller.v2_value : controller.v1_value;
    std::string done;
    if (const auto failure = exercise_child(dir, file, value, done); !failure.empty()) {
        cap.detail = where + ", child cgroup: " + failure;
        cap.fix = hierarchy->v2
                      ? fmt::format("echo +{} > {}/cgroup.subtree_control", controller.v2_name, hierarchy->path)
                      : fmt::format("run as root, or delegate {} to this user", hierarchy->path);
        return cap;
    }
    remove.dismiss();
    if (::rmdir(dir.c_str()) != 0) {
        cap.detail = fmt::format("{}, rmdir {}: {}", where, dir, errno_text(errno));
        cap.fix = fmt::format("rmdir {}", dir);
        return cap;
    }
    cap.status = Status::ok;
    cap.detail = fmt::format("{}, a child cgroup {}", where, done);
    return cap;
}

}  // namespace

std::vector<Capability> probe_cgroups() {
    std::vector<Capability> result;
    for (const auto& controller : kControllers) result.push_back(probe_controller(controller));
    return result;
}

}  // namespace strata::doctor
