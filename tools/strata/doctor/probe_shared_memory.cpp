// SPDX-License-Identifier: MIT
// memfd and shm: the two ways strata backs a region with shared pages.
// Both probes map the object and check that bytes written through the mapping
// are what the file descriptor reads back, i.e. that the mapping is shared.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <linux/magic.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "probe.hpp"
#include "system.hpp"

namespace strata::doctor {

namespace {

constexpr std::size_t kObjectSize = std::size_t{1} << 20;
constexpr std::uint64_t kShmLowWater = std::uint64_t{256} << 20;
constexpr char kPattern[] = "strata-doctor";

// ftruncate + mmap + write through the mapping + pread through the fd.
// Returns an empty string on success, else the step that failed.
std::string exercise_shared_fd(int fd) {
    if (::ftruncate(fd, static_cast<off_t>(kObjectSize)) != 0)
        return fmt::format("ftruncate {}: {}", kObjectSize, errno_text(errno));
    void* map = ::mmap(nullptr, kObjectSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) return "mmap: " + errno_text(errno);
    ScopeExit unmap([map] { ::munmap(map, kObjectSize); });

    // The last page too, so the whole length is backed, not just the first page.
    auto* bytes = static_cast<char*>(map);
    std::memcpy(bytes, kPattern, sizeof(kPattern));
    std::memcpy(bytes + kObjectSize - sizeof(kPattern), kPattern, sizeof(kPattern));

    std::array<char, sizeof(kPattern)> readback{};
    const auto tail = static_cast<off_t>(kObjectSize - sizeof(kPattern));
    if (::pread(fd, readback.data(), readback.size(), tail) != static_cast<ssize_t>(readback.size()))
        return "pread: " + errno_text(errno);
    if (std::memcmp(readback.data(), kPattern, sizeof(kPattern)) != 0)
        return "bytes written through the mapping did not reach the file";
    return {};
}

}  // namespace

Capability probe_memfd() {
    Capability cap("memfd", true);
    const UniqueFd fd(::memfd_create("strata-doctor", MFD_CLOEXEC));
    if (!fd.valid()) {
        const int err = errno;
        cap.detail = "memfd_create: " + errno_text(err);
        cap.fix = err == ENOSYS ? "a kernel with memfd_create (3.17 or newer)"
                                : "allow memfd_create (seccomp profile of the container)";
        return cap;
    }
    if (const auto failure = exercise_shared_fd(fd.get()); !failure.empty()) {
        cap.detail = failure;
        cap.fix = "check RLIMIT_AS and memory cgroup limits";
        return cap;
    }
    cap.status = Status::ok;
    cap.detail = fmt::format("memfd_create + mmap of {} shared with the fd", human_bytes(kObjectSize));
    return cap;
}

Capability probe_shm() {
    Capability cap("shm", true);
    struct statvfs vfs {};
    struct statfs fs {};
    if (::statvfs("/dev/shm", &vfs) != 0 || ::statfs("/dev/shm", &fs) != 0) {
        cap.detail = "/dev/shm: " + errno_text(errno);
        cap.fix = "mount -t tmpfs -o size=1G tmpfs /dev/shm";
        return cap;
    }
    const std::uint64_t total = std::uint64_t{vfs.f_blocks} * vfs.f_frsize;
    const std::uint64_t free = std::uint64_t{vfs.f_bavail} * vfs.f_frsize;
    const bool tmpfs = fs.f_type == TMPFS_MAGIC;

    const std::string name = "/" + unique_name("shm");
    const UniqueFd fd(::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600));
    if (!fd.valid()) {
        cap.detail = fmt::format("shm_open {}: {}", name, errno_text(errno));
        cap.fix = "make /dev/shm a writable tmpfs: mount -t tmpfs -o size=1G tmpfs /dev/shm";
        return cap;
    }
    ScopeExit unlink([&name] { ::shm_unlink(name.c_str()); });
    if (const auto failure = exercise_shared_fd(fd.get()); !failure.empty()) {
        cap.detail = failure;
        cap.fix = "grow /dev/shm: mount -o remount,size=1G /dev/shm (docker: --shm-size=1g)";
        return cap;
    }

    cap.detail = fmt::format("/dev/shm {}{} with {} free, shm_open + mmap of {}", tmpfs ? "tmpfs " : "",
                             human_bytes(total), human_bytes(free), human_bytes(kObjectSize));
    if (free < kShmLowWater) {
        cap.status = Status::degraded;
        cap.detail += fmt::format(" (less than {} free)", human_bytes(kShmLowWater));
        cap.fix = "grow /dev/shm: mount -o remount,size=1G /dev/shm (docker: --shm-size=1g)";
        return cap;
    }
    if (!tmpfs) {
        cap.status = Status::degraded;
        cap.detail += " (not tmpfs: segments go to disk)";
        cap.fix = "mount -t tmpfs -o size=1G tmpfs /dev/shm";
        return cap;
    }
    cap.status = Status::ok;
    return cap;
}

}  // namespace strata::doctor
