// SPDX-License-Identifier: MIT
// Privileged fixtures for integration tests, each undone by its destructor:
// a tmpfs mount, a loop device, an ext4 mount on a loop device and a cgroup
// v1 memory group.
//
// Check the capability first (capability.hpp), then construct the fixture and
// assert ok(): a fixture that could not be set up says why in error().
#pragma once

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "support/capability.hpp"

namespace strata::test {

/// Writes `text` to a (sysfs, cgroupfs) file in one write(); 0 or the errno.
inline int write_text(const std::filesystem::path& path, std::string_view text) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        return errno;
    }
    const ssize_t written = ::write(fd, text.data(), text.size());
    const int err = written == static_cast<ssize_t>(text.size()) ? 0 : (written < 0 ? errno : EIO);
    ::close(fd);
    return err;
}

inline std::string read_text(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return text;
}

/// Moves this process into a mount namespace of its own, once, so that a
/// mount a test makes disappears with the process even when it is killed.
inline bool enter_private_mount_namespace() {
    static const bool entered = [] {
        if (::unshare(CLONE_NEWNS) != 0) {
            return false;
        }
        return ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0;
    }();
    return entered;
}

/// A tmpfs mounted on `target` (created if needed), unmounted on destruction.
class TmpfsMount {
public:
    TmpfsMount(std::filesystem::path target, const std::string& options, unsigned long flags = 0)
        : target_(std::move(target)) {
        std::error_code ignored;
        std::filesystem::create_directories(target_, ignored);
        enter_private_mount_namespace();
        if (::mount("tmpfs", target_.c_str(), "tmpfs", flags, options.c_str()) != 0) {
            error_ = fmt::format("mount -t tmpfs -o {} {}: {}", options, target_.string(), std::strerror(errno));
            return;
        }
        mounted_ = true;
    }
    TmpfsMount(const TmpfsMount&) = delete;
    TmpfsMount& operator=(const TmpfsMount&) = delete;
    ~TmpfsMount() {
        if (mounted_ && ::umount2(target_.c_str(), 0) != 0) {
            ::umount2(target_.c_str(), MNT_DETACH);
        }
    }

    [[nodiscard]] bool ok() const { return mounted_; }
    [[nodiscard]] const std::string& error() const { return error_; }
    [[nodiscard]] const std::filesystem::path& path() const { return target_; }

    /// mount -o remount,ro: 0 or the errno.
    [[nodiscard]] int remount_read_only() const {
        return ::mount("tmpfs", target_.c_str(), "tmpfs", MS_REMOUNT | MS_RDONLY, nullptr) == 0 ? 0 : errno;
    }

private:
    std::filesystem::path target_;
    bool mounted_ = false;
    std::string error_;
};

/// A loop device attached to `backing` with `losetup --find --show`, detached on destruction.
class LoopDevice {
public:
    explicit LoopDevice(const std::filesystem::path& backing) : losetup_(find_program("losetup")) {
        const std::string command = fmt::format("'{}' --find --show '{}' 2>&1", losetup_.string(), backing.string());
        FILE* pipe = ::popen(command.c_str(), "r");
        if (pipe == nullptr) {
            error_ = fmt::format("popen {}: {}", command, std::strerror(errno));
            return;
        }
        std::string output;
        std::array<char, 256> buffer{};
        while (std::fgets(buffer.data(), static_cast<int>(buffer.size()), pipe) != nullptr) {
            output += buffer.data();
        }
        const int status = ::pclose(pipe);
        while (!output.empty() && (output.back() == '\n' || output.back() == ' ')) {
            output.pop_back();
        }
        if (status != 0 || !output.starts_with("/dev/")) {
            error_ = fmt::format("{} -> status {}: {}", command, status, output);
            return;
        }
        device_ = output;
    }
    LoopDevice(const LoopDevice&) = delete;
    LoopDevice& operator=(const LoopDevice&) = delete;
    ~LoopDevice() {
        if (!device_.empty()) {
            const std::string command = fmt::format("'{}' -d '{}' 2>&1", losetup_.string(), device_.string());
            if (std::system(command.c_str()) != 0) {
                std::fprintf(stderr, "warning: %s failed\n", command.c_str());
            }
        }
    }

    [[nodiscard]] bool ok() const { return !device_.empty(); }
    [[nodiscard]] const std::string& error() const { return error_; }
    [[nodiscard]] const std::filesystem::path& device() const { return device_; }

private:
    std::filesystem::path losetup_;
    std::filesystem::path device_;
    std::string error_;
};

/// An ext4 file system of `size_bytes` in an image file on a loop device,
/// mounted on `target`; unmounted and detached on destruction. Unlike tmpfs,
/// ext4 grows a file while fallocate works through it, so a failing
/// reservation leaves a longer file behind unless the caller shrinks it back.
class Ext4Mount {
public:
    Ext4Mount(const std::filesystem::path& image, std::filesystem::path target, std::uint64_t size_bytes)
        : target_(std::move(target)) {
        const int fd = ::open(image.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        const bool sized = fd >= 0 && ::ftruncate(fd, static_cast<off_t>(size_bytes)) == 0;
        if (fd >= 0) {
            ::close(fd);
        }
        if (!sized) {
            error_ = fmt::format("creating the image {}: {}", image.string(), std::strerror(errno));
            return;
        }
        loop_ = std::make_unique<LoopDevice>(image);
        if (!loop_->ok()) {
            error_ = loop_->error();
            return;
        }
        const std::string mkfs = fmt::format("'{}' -q -F '{}' >/dev/null 2>&1", find_program("mkfs.ext4").string(),
                                             loop_->device().string());
        if (std::system(mkfs.c_str()) != 0) {
            error_ = fmt::format("{} failed", mkfs);
            return;
        }
        std::error_code ignored;
        std::filesystem::create_directories(target_, ignored);
        enter_private_mount_namespace();
        if (::mount(loop_->device().c_str(), target_.c_str(), "ext4", 0, nullptr) != 0) {
            error_ =
                fmt::format("mount {} on {}: {}", loop_->device().string(), target_.string(), std::strerror(errno));
            return;
        }
        mounted_ = true;
    }
    Ext4Mount(const Ext4Mount&) = delete;
    Ext4Mount& operator=(const Ext4Mount&) = delete;
    ~Ext4Mount() {
        if (mounted_ && ::umount2(target_.c_str(), 0) != 0) {
            ::umount2(target_.c_str(), MNT_DETACH);
        }
    }

    [[nodiscard]] bool ok() const { return mounted_; }
    [[nodiscard]] const std::string& error() const { return error_; }
    [[nodiscard]] const std::filesystem::path& path() const { return target_; }

private:
    std::filesystem::path target_;
    std::unique_ptr<LoopDevice> loop_;
    bool mounted_ = false;
    std::string error_;
};

inline constexpr std::string_view memory_cgroup_root = "/sys/fs/cgroup/memory";

/// This process's cgroup v1 memory group as a directory under memory_cgroup_root.
inline std::filesystem::path own_memory_cgroup() {
    std::ifstream in("/proc/self/cgroup");
    for (std::string line; std::getline(in, line);) {
        // "4:memory:/process_api/abc"
        const std::size_t first = line.find(':');
        const std::size_t second = line.find(':', first + 1);
        if (first == std::string::npos || second == std::string::npos) {
            continue;
        }
        const std::string_view controllers = std::string_view(line).substr(first + 1, second - first - 1);
        if (controllers == "memory" || controllers.starts_with("memory,") ||
            controllers.find(",memory") != std::string_view::npos) {
            return std::filesystem::path(memory_cgroup_root) / line.substr(second + 2);
        }
    }
    return std::filesystem::path(memory_cgroup_root);
}

/// A fresh cgroup v1 memory group with a limit. On destruction any process
/// still in it goes back to the group the test started in, and it is removed.
class MemoryCgroup {
public:
    MemoryCgroup(const std::string& name, std::uint64_t limit_bytes)
        : path_(std::filesystem::path(memory_cgroup_root) / name), origin_(own_memory_cgroup()) {
        remove_groups_of_dead_tests();
        if (::mkdir(path_.c_str(), 0755) != 0) {
            error_ = fmt::format("mkdir {}: {}", path_.string(), std::strerror(errno));
            return;
        }
        created_ = true;
        if (const int err = write_text(path_ / "memory.limit_in_bytes", std::to_string(limit_bytes)); err != 0) {
            error_ = fmt::format("setting memory.limit_in_bytes of {}: {}", path_.string(), std::strerror(err));
        }
    }
    MemoryCgroup(const MemoryCgroup&) = delete;
    MemoryCgroup& operator=(const MemoryCgroup&) = delete;
    ~MemoryCgroup() {
        if (!created_) {
            return;
        }
        std::istringstream procs(read_text(path_ / "cgroup.procs"));
        for (std::string pid; procs >> pid;) {
            write_text(origin_ / "cgroup.procs", pid);
        }
        for (int attempt = 0; attempt < 200; ++attempt) {
            if (::rmdir(path_.c_str()) == 0 || errno == ENOENT) {
                return;
            }
            ::usleep(10'000);
        }
        std::fprintf(stderr, "warning: could not remove %s: %s\n", path_.c_str(), std::strerror(errno));
    }

    /// Removes the empty "strata-test-<pid>-..." groups whose test process is
    /// gone: a test killed by its ctest timeout never runs its destructor, and
    /// its group would otherwise outlive it on the machine.
    static void remove_groups_of_dead_tests() {
        std::error_code ec;
        for (const auto& entry : std::filesystem::directory_iterator(memory_cgroup_root, ec)) {
            const std::string leaf = entry.path().filename().string();
            constexpr std::string_view prefix = "strata-test-";
            if (!entry.is_directory(ec) || !leaf.starts_with(prefix)) {
                continue;
            }
            const long pid = std::strtol(leaf.c_str() + prefix.size(), nullptr, 10);
            const bool owner_gone = pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
            if (owner_gone && read_text(entry.path() / "cgroup.procs").empty()) {
                ::rmdir(entry.path().c_str());
            }
        }
    }

    [[nodiscard]] bool ok() const { return created_ && error_.empty(); }
    [[nodiscard]] const std::string& error() const { return error_; }
    [[nodiscard]] const std::filesystem::path& path() const { return path_; }

    /// Moves the calling process into the group: 0 or the errno.
    [[nodiscard]] int enter() const { return write_text(path_ / "cgroup.procs", std::to_string(::getpid())); }

    /// A numeric control file of the group, such as "memory.max_usage_in_bytes".
    [[nodiscard]] std::uint64_t read_number(std::string_view file) const {
        return std::strtoull(read_text(path_ / file).c_str(), nullptr, 10);
    }

private:
    std::filesystem::path path_;
    std::filesystem::path origin_;
    bool created_ = false;
    std::string error_;
};

}  // namespace strata::test
