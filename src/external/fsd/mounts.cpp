// SPDX-License-Identifier: MIT
// strata-fsd mounts: listing and cleaning (see mounts.hpp).
#include "mounts.hpp"

#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "protocol.hpp"

namespace strata::external::fsd {

namespace {

bool is_mounted(const std::string& mount_point) {
    for (const auto& mount : list_mounts()) {
        if (mount.mount_point == mount_point) {
            return true;
        }
    }
    return false;
}

}  // namespace

std::vector<MountInfo> list_mounts() {
    std::vector<MountInfo> mounts;
    std::ifstream info("/proc/self/mountinfo");
    const std::string type = "fuse." + std::string(kName);
    const std::string source_prefix = std::string(kName) + ":";
    for (std::string line; std::getline(info, line);) {
        // id parent dev root mount-point options [optional...] - type source super-options
        std::istringstream fields(line);
        std::string id, parent, dev, root, mount_point, word;
        fields >> id >> parent >> dev >> root >> mount_point;
        while (fields >> word && word != "-") {
        }
        std::string fstype, source;
        fields >> fstype >> source;
        if (fstype != type || !source.starts_with(source_prefix)) {
            continue;
        }
        MountInfo mount;
        mount.mount_point = mount_point;
        mount.daemon = static_cast<pid_t>(parse_u64(std::string_view(source).substr(source_prefix.size())).value_or(0));
        mount.alive = daemon_alive(mount.daemon);
        mounts.push_back(mount);
    }
    return mounts;
}

bool daemon_alive(pid_t pid) {
    if (pid <= 0) {
        return false;
    }
    std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
    std::string name;
    std::getline(comm, name);
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string skip, state;
    stat >> skip >> skip >> state;  // a zombie has closed /dev/fuse already
    return name == kName && state != "Z";
}

Result<void> remove_mount(const std::string& mount_point) {
    if (is_mounted(mount_point) && ::umount2(mount_point.c_str(), MNT_DETACH) != 0) {
        return make_sys_error(errno, "remove_mount: mount_point={}: umount2(MNT_DETACH)", mount_point);
    }
    const std::filesystem::path mnt(mount_point);
    const auto dir = mnt.parent_path();
    if (mnt.filename() == "mnt" && dir.filename().string().starts_with(std::string(kName) + "-")) {
        ::rmdir(mnt.c_str());
        ::unlink((dir / "ctl").c_str());
        ::rmdir(dir.c_str());
    }
    return {};
}

std::vector<std::string> clean_stale_mounts() {
    std::vector<std::string> cleaned;
    for (const auto& mount : list_mounts()) {
        if (!mount.alive && remove_mount(mount.mount_point)) {
            cleaned.push_back(mount.mount_point);
        }
    }
    return cleaned;
}

}  // namespace strata::external::fsd
