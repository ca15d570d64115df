// SPDX-License-Identifier: MIT
#include "region/written_pages.hpp"

#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <array>
#include <cerrno>
#include <cstdint>

#include "core/log.hpp"

namespace strata::written_pages {

namespace {

// The kernel ABI of Linux 6.7 (include/uapi/linux/fs.h, userfaultfd.h); the
// build host's headers may be older than the kernel the library runs on.
// NOLINTBEGIN(readability-identifier-naming): the kernel's names
#ifndef PAGEMAP_SCAN
struct page_region {
    std::uint64_t start;
    std::uint64_t end;
    std::uint64_t categories;
};
struct pm_scan_arg {
    std::uint64_t size;
    std::uint64_t flags;
    std::uint64_t start;
    std::uint64_t end;
    std::uint64_t walk_end;
    std::uint64_t vec;
    std::uint64_t vec_len;
    std::uint64_t max_pages;
    std::uint64_t category_inverted;
    std::uint64_t category_mask;
    std::uint64_t category_anyof_mask;
    std::uint64_t return_mask;
};
constexpr unsigned long PAGEMAP_SCAN = _IOWR('f', 16, struct pm_scan_arg);
constexpr std::uint64_t PM_SCAN_WP_MATCHING = 1U << 0;
constexpr std::uint64_t PM_SCAN_CHECK_WPASYNC = 1U << 1;
constexpr std::uint64_t PAGE_IS_WRITTEN = 1U << 1;
constexpr std::uint64_t PAGE_IS_PRESENT = 1U << 3;
constexpr std::uint64_t PAGE_IS_SWAPPED = 1U << 4;
constexpr std::uint64_t PAGE_IS_PFNZERO = 1U << 5;
#endif
// NOLINTEND(readability-identifier-naming)
constexpr std::uint64_t uffd_feature_wp_async = 1U << 15;  // UFFD_FEATURE_WP_ASYNC
constexpr int uffd_user_mode_only = 1;                     // UFFD_USER_MODE_ONLY

/// One PAGEMAP_SCAN over [start, end): written pages that are in memory or
/// swapped out, and not the zero page (a read of a fresh page maps it; it
/// holds nothing to write). Holes never count and are never marked: marking
/// them would fill page tables and cost the program its huge pages.
/// With `protect`, the pages found are write-protected in the same step.
long scan(int pagemap, std::uintptr_t start, std::uintptr_t end, bool protect, page_region* out, std::size_t count,
          std::uintptr_t& walk_end) {
    pm_scan_arg arg{};
    arg.size = sizeof arg;
    arg.flags = protect ? (PM_SCAN_WP_MATCHING | PM_SCAN_CHECK_WPASYNC) : 0;
    arg.start = start;
    arg.end = end;
    arg.vec = reinterpret_cast<std::uintptr_t>(out);
    arg.vec_len = count;
    arg.category_inverted = PAGE_IS_PFNZERO;
    arg.category_mask = PAGE_IS_WRITTEN | PAGE_IS_PFNZERO;
    arg.category_anyof_mask = PAGE_IS_PRESENT | PAGE_IS_SWAPPED;
    arg.return_mask = PAGE_IS_WRITTEN;
    const long found = ::ioctl(pagemap, PAGEMAP_SCAN, &arg);
    walk_end = arg.walk_end;
    return found;
}

}  // namespace

posix::UniqueFd track(std::byte* begin, std::size_t length, bool missing) {
    // Missing pages must be served to the kernel's own accesses too, or a
    // read() into the range would fail with EFAULT instead of waiting.
    const int mode_only = missing ? 0 : uffd_user_mode_only;
    posix::UniqueFd uffd(static_cast<int>(::syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | mode_only)));
    if (uffd.get() < 0) {
        detail::log().debug("tracking written pages: userfaultfd: {}", describe_errno(errno));
        return {};
    }
    uffdio_api api{.api = UFFD_API, .features = uffd_feature_wp_async, .ioctls = 0};
    if (::ioctl(uffd.get(), UFFDIO_API, &api) != 0) {
        detail::log().debug("tracking written pages: no asynchronous write-protection: {}", describe_errno(errno));
        return {};
    }
    uffdio_register reg{};
    reg.range.start = reinterpret_cast<std::uintptr_t>(begin);
    reg.range.len = length;
    reg.mode = UFFDIO_REGISTER_MODE_WP | (missing ? UFFDIO_REGISTER_MODE_MISSING : 0);
    if (::ioctl(uffd.get(), UFFDIO_REGISTER, &reg) != 0) {
        detail::log().debug("tracking written pages: UFFDIO_REGISTER: {}", describe_errno(errno));
        return {};
    }
    // Protect what is there already (nothing, for fresh memory); this also
    // checks that PAGEMAP_SCAN can write-protect here.
    const posix::UniqueFd pagemap(::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC));
    std::array<page_region, 1> ignored{};
    std::uintptr_t at = reg.range.start;
    const std::uintptr_t end = at + length;
    while (pagemap.get() >= 0 && at < end) {
        std::uintptr_t walked = end;
        if (scan(pagemap.get(), at, end, true, ignored.data(), ignored.size(), walked) < 0) {
            detail::log().debug("tracking written pages: PAGEMAP_SCAN: {}", describe_errno(errno));
            return {};
        }
        at = walked > at ? walked : end;
    }
    if (pagemap.get() < 0) {
        return {};
    }
    return uffd;
}

Result<std::vector<Run>> take(const char* op, std::byte* base, std::size_t begin, std::size_t end,
                              std::size_t keep_tail) {
    const posix::UniqueFd pagemap(::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC));
    if (pagemap.get() < 0) {
        return make_sys_error(errno, "{}: cannot open /proc/self/pagemap to find written pages", op);
    }
    const auto origin = reinterpret_cast<std::uintptr_t>(base);
    std::vector<Run> found;
    std::array<page_region, 256> regions{};
    const bool protect = keep_tail == 0;
    for (std::uintptr_t at = origin + begin, stop = origin + end; at < stop;) {
        std::uintptr_t walked = stop;
        const long n = scan(pagemap.get(), at, stop, protect, regions.data(), regions.size(), walked);
        if (n < 0) {
            return make_sys_error(errno, "{}: PAGEMAP_SCAN of the written pages failed", op);
        }
        for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i) {
            const std::size_t offset = regions[i].start - origin;
            const std::size_t length = regions[i].end - regions[i].start;
            if (!found.empty() && found.back().offset + found.back().length == offset) {
                found.back().length += length;
            } else {
                found.push_back({offset, length});
            }
        }
        at = walked > at ? walked : stop;
    }
    if (protect) {
        return found;
    }
    // Leave the tail of each run that stops inside the range, then take (and
    // protect) what is left, run by run.
    std::vector<Run> taken;
    for (Run run : found) {
        if (run.offset + run.length < end) {
            run.length = run.length > keep_tail ? run.length - keep_tail : 0;
        }
        if (run.length == 0) {
            continue;
        }
        auto part = take(op, base, run.offset, run.offset + run.length);
        if (!part) {
            return part;
        }
        taken.insert(taken.end(), part->begin(), part->end());
    }
    return taken;
}

}  // namespace strata::written_pages
