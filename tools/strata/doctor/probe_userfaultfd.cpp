// SPDX-License-Identifier: MIT
// userfaultfd: open one (syscall, else /dev/userfaultfd), complete the
// UFFDIO_API handshake, register an anonymous page for missing faults and
// resolve it with UFFDIO_COPY — the calls a lazily filled region would make,
// without needing a fault-handling thread.
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "probe.hpp"
#include "system.hpp"

namespace strata::doctor {

namespace {

constexpr char kFix[] =
    "sysctl vm.unprivileged_userfaultfd=1, or grant CAP_SYS_PTRACE, or give read-write access to "
    "/dev/userfaultfd";

// Returns the descriptor, or -1 with both errors recorded.
int open_userfaultfd(std::string& via, std::string& problem) {
    const long fd = ::syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
    if (fd >= 0) {
        via = "userfaultfd(2)";
        return static_cast<int>(fd);
    }
    const int syscall_err = errno;
    // Since 6.1 the device hands out descriptors to whoever may open it,
    // independent of vm.unprivileged_userfaultfd.
    const UniqueFd dev(::open("/dev/userfaultfd", O_RDWR | O_CLOEXEC));
    if (!dev.valid()) {
        problem = fmt::format("userfaultfd(2): {}; /dev/userfaultfd: {}", errno_text(syscall_err), errno_text(errno));
        return -1;
    }
    const int dev_fd = ::ioctl(dev.get(), USERFAULTFD_IOC_NEW, O_CLOEXEC | O_NONBLOCK);
    if (dev_fd < 0) {
        problem =
            fmt::format("userfaultfd(2): {}; USERFAULTFD_IOC_NEW: {}", errno_text(syscall_err), errno_text(errno));
        return -1;
    }
    via = "/dev/userfaultfd";
    return dev_fd;
}

// Register + copy + read back on one page. Empty on success, else the reason.
std::string register_and_fill_page(int uffd) {
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    void* area = ::mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (area == MAP_FAILED) return "mmap: " + errno_text(errno);
    ScopeExit unmap([area, page] { ::munmap(area, page); });
    const auto start = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(area));

    uffdio_register reg{};
    reg.range = {start, page};
    reg.mode = UFFDIO_REGISTER_MODE_MISSING;
    if (::ioctl(uffd, UFFDIO_REGISTER, &reg) != 0) return "UFFDIO_REGISTER: " + errno_text(errno);
    ScopeExit unregister([uffd, &reg] { ::ioctl(uffd, UFFDIO_UNREGISTER, &reg.range); });

    std::vector<unsigned char> source(page, 0x5a);
    uffdio_copy copy{};
    copy.dst = start;
    copy.src = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(source.data()));
    copy.len = page;
    if (::ioctl(uffd, UFFDIO_COPY, &copy) != 0) return "UFFDIO_COPY: " + errno_text(errno);
    if (copy.copy != static_cast<std::int64_t>(page))
        return fmt::format("UFFDIO_COPY copied {} of {} bytes", copy.copy, page);
    if (std::memcmp(area, source.data(), page) != 0) return "the page filled by UFFDIO_COPY reads differently";
    return {};
}

}  // namespace

Capability probe_userfaultfd() {
    Capability cap("userfaultfd", false);
    std::string via;
    std::string problem;
    const UniqueFd uffd(open_userfaultfd(via, problem));
    if (!uffd.valid()) {
        cap.detail = problem;
        cap.fix = problem.find("ENOSYS") != std::string::npos ? "a kernel built with CONFIG_USERFAULTFD=y" : kFix;
        return cap;
    }
    uffdio_api api{};
    api.api = UFFD_API;
    if (::ioctl(uffd.get(), UFFDIO_API, &api) != 0) {
        cap.detail = fmt::format("{}: UFFDIO_API: {}", via, errno_text(errno));
        cap.fix = kFix;
        return cap;
    }
    if (const auto failure = register_and_fill_page(uffd.get()); !failure.empty()) {
        cap.detail = fmt::format("{}: {}", via, failure);
        cap.fix = kFix;
        return cap;
    }
    cap.status = Status::ok;
    cap.detail = fmt::format("{}, API {:#x}, features {:#x}, registered and filled a page", via, api.api, api.features);
    return cap;
}

}  // namespace strata::doctor
