// SPDX-License-Identifier: MIT
// Write-back of storage-backed parts. Kernel write-back lets the kernel find
// the dirty pages (msync walks only pages tagged dirty); explicit_sync finds
// changed pages in /proc/self/pagemap, since a written page of a private file
// mapping becomes an anonymous page; direct does the same and writes them with
// O_DIRECT.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <algorithm>
#include <string>
#include <vector>

#include "region/background_fill.hpp"
#include "region/posix.hpp"
#include "region/region_impl.hpp"
#include "region/written_pages.hpp"

namespace strata {

using posix::page_size;

namespace {

constexpr std::uint64_t pagemap_present = std::uint64_t{1} << 63;
constexpr std::uint64_t pagemap_swapped = std::uint64_t{1} << 62;
constexpr std::uint64_t pagemap_file_or_shared = std::uint64_t{1} << 61;

using Run = written_pages::Run;

Result<std::vector<Run>> changed_pages(const char* op, const std::byte* base, std::size_t begin, std::size_t end) {
    const posix::UniqueFd pagemap(::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC));
    if (pagemap.get() < 0) {
        return make_sys_error(errno, "{}: cannot open /proc/self/pagemap to find changed pages", op);
    }
    const std::size_t page = page_size();
    std::vector<Run> runs;
    std::vector<std::uint64_t> entries(4096);
    for (std::size_t at = begin; at < end;) {
        const std::size_t pages = std::min(entries.size(), (end - at) / page);
        const auto vpn = reinterpret_cast<std::uintptr_t>(base + at) / page;
        const auto want = static_cast<ssize_t>(pages * sizeof(std::uint64_t));
        const ssize_t got = ::pread(pagemap.get(), entries.data(), static_cast<std::size_t>(want),
                                    static_cast<off_t>(vpn * sizeof(std::uint64_t)));
        if (got != want) {
            return make_sys_error(got < 0 ? errno : EIO, "{}: cannot read /proc/self/pagemap", op);
        }
        for (std::size_t i = 0; i < pages; ++i, at += page) {
            const std::uint64_t e = entries[i];
            const bool changed =
                ((e & pagemap_present) != 0 && (e & pagemap_file_or_shared) == 0) || (e & pagemap_swapped) != 0;
            if (!changed) {
                continue;
            }
            if (!runs.empty() && runs.back().offset + runs.back().length == at) {
                runs.back().length += page;
            } else {
                runs.push_back({at, page});
            }
        }
    }
    return runs;
}

Result<void> write_all(const char* op, int fd, const std::byte* data, std::size_t length, std::uint64_t offset,
                       const std::filesystem::path& path) {
    while (length > 0) {
        const ssize_t n = ::pwrite(fd, data, length, static_cast<off_t>(offset));
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return make_sys_error(errno, "{}: cannot write {} bytes at offset {} of {}", op, length, offset,
                                  path.string());
        }
        data += n;
        length -= static_cast<std::size_t>(n);
        offset += static_cast<std::uint64_t>(n);
    }
    return {};
}

/// Writes one run of a direct region: the page-aligned bulk with O_DIRECT
/// (straight from the pages, no page-cache copy), a partial last page and
/// anything O_DIRECT refuses through the page cache.
Result<void> write_run_direct(const char* op, int fd, int direct_fd, const std::byte* data, std::size_t length,
                              std::uint64_t offset, const std::filesystem::path& path) {
    const std::size_t bulk = length / page_size() * page_size();
    if (direct_fd >= 0 && bulk > 0) {
        std::size_t done = 0;
        while (done < bulk) {
            const ssize_t n = ::pwrite(direct_fd, data + done, bulk - done, static_cast<off_t>(offset + done));
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n < 0 && errno == EINVAL) {
                break;  // alignment the device does not accept: the rest goes through the page cache
            }
            if (n < 0) {
                return make_sys_error(errno, "{}: cannot write {} bytes at offset {} of {} (O_DIRECT)", op, bulk - done,
                                      offset + done, path.string());
            }
            done += static_cast<std::size_t>(n);
        }
        data += done;
        length -= done;
        offset += done;
    }
    return write_all(op, fd, data, length, offset, path);
}

}  // namespace

Result<void> RegionAccess::check_range(const Region& r, const char* op, std::size_t offset, std::size_t length) {
    if (r.base_ == nullptr) {
        return make_error(Errc::invalid_argument, "{}: the region is not open", op);
    }
    if (offset > r.size_ || length > r.size_ - offset) {
        return make_error(Errc::invalid_argument, "{}: offset={} length={}: outside the region of {} bytes", op, offset,
                          length, r.size_);
    }
    return {};
}

std::pair<std::size_t, std::size_t> RegionAccess::storage_pages(const Region& r, std::size_t offset,
                                                                std::size_t length) {
    const std::size_t begin = std::max(offset, r.storage_begin_);
    const std::size_t end = std::min(offset + length, storage_end(r));
    if (r.storage_length_ == 0 || begin >= end) {
        return {0, 0};
    }
    const std::size_t aligned = posix::round_down_to_page(begin);
    return {aligned, posix::round_up_to_page(end) - aligned};
}

Result<std::size_t> RegionAccess::write_back_private(Region& r, const char* op, std::size_t offset, std::size_t length,
                                                     std::size_t keep_tail) {
    const auto [begin, span] = storage_pages(r, offset, length);
    if (span == 0) {
        return std::size_t{0};
    }
    if (r.fill_ != nullptr) {
        if (auto filling = r.fill_->status(op); !filling) {
            return std::unexpected(filling.error());
        }
    }
    const bool tracked = r.tracker_ >= 0;
    auto runs = tracked ? written_pages::take(op, r.base_, begin, begin + span, keep_tail)
                        : changed_pages(op, r.base_, begin, begin + span);
    if (!runs) {
        return std::unexpected(runs.error());
    }
    if (tracked && !r.unwritten_.empty()) {
        // Taken by an earlier call whose write failed: no longer marked written, so kept here.
        for (const auto& [at, len] : std::exchange(r.unwritten_, {})) {
            runs->push_back({at, len});
        }
    }
    const bool direct = r.writeback_ == Writeback::direct;
    const posix::UniqueFd direct_fd =
        direct && !runs->empty() ? posix::reopen_direct(r.fd_, O_WRONLY) : posix::UniqueFd();
    std::size_t written = 0;
    for (std::size_t i = 0; i < runs->size(); ++i) {
        const Run& run = (*runs)[i];
        // The last page may reach past the storage part's end: write only what the file holds.
        const std::size_t end = std::min(run.offset + run.length, storage_end(r));
        const std::uint64_t at = file_offset_of(r, run.offset);
        auto ok =
            direct ? write_run_direct(op, r.fd_, direct_fd.get(), r.base_ + run.offset, end - run.offset, at, r.path_)
                   : write_all(op, r.fd_, r.base_ + run.offset, end - run.offset, at, r.path_);
        if (!ok) {
            if (tracked) {
                for (std::size_t j = i; j < runs->size(); ++j) {
                    r.unwritten_.emplace_back((*runs)[j].offset, (*runs)[j].length);
                }
            }
            return std::unexpected(ok.error());
        }
        written += end - run.offset;
    }
    if (tracked) {
        // The pages stay as they are: write-protected, so a later store marks them written again.
        return written;
    }
    // Dropping the private copies makes the mapping show the file again, so
    // the next sync sees only pages changed after this one. A direct region's
    // pages may be anonymous memory, which MADV_DONTNEED would zero: the file
    // is mapped over them instead.
    for (const Run& run : *runs) {
        if (direct ? ::mmap(r.base_ + run.offset, run.length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, r.fd_,
                            static_cast<off_t>(file_offset_of(r, run.offset))) == MAP_FAILED
                   : ::madvise(r.base_ + run.offset, run.length, MADV_DONTNEED) != 0) {
            return make_sys_error(errno, "{}: cannot drop written pages", op);
        }
    }
    return written;
}

Result<std::size_t> Region::write_changed(std::size_t keep_tail) {
    constexpr const char* op = "Region::write_changed";
    if (base_ == nullptr) {
        return make_error(Errc::invalid_argument, "{}: the region is not open", op);
    }
    if (tracker_ < 0 || read_only_) {
        return std::size_t{0};
    }
    auto written = RegionAccess::write_back_private(*this, op, 0, size_, keep_tail);
    if (written && *written > 0) {
        unflushed_ = true;
    }
    return written;
}

Result<void> Region::sync(std::size_t offset, std::size_t length) {
    constexpr const char* op = "Region::sync";
    if (auto ok = RegionAccess::check_range(*this, op, offset, length); !ok) {
        return ok;
    }
    const auto [begin, span] = RegionAccess::storage_pages(*this, offset, length);
    if (span == 0 || read_only_) {
        return {};
    }
    if (writeback_ != Writeback::kernel) {
        auto written = RegionAccess::write_back_private(*this, op, offset, length);
        if (!written) {
            return std::unexpected(written.error());
        }
        if (*written == 0 && !unflushed_) {
            return {};
        }
        if (::fdatasync(fd_) != 0) {
            return make_sys_error(errno, "{}: cannot flush {} to the device", op, path_.string());
        }
        unflushed_ = false;
        return {};
    }
    if (::msync(base_ + begin, span, MS_SYNC) != 0) {
        return make_sys_error(errno, "{}: offset={} length={}: cannot write back {}", op, offset, length,
                              path_.string());
    }
    return {};
}

Result<void> Region::sync_async(std::size_t offset, std::size_t length) {
    constexpr const char* op = "Region::sync_async";
    if (auto ok = RegionAccess::check_range(*this, op, offset, length); !ok) {
        return ok;
    }
    const auto [begin, span] = RegionAccess::storage_pages(*this, offset, length);
    if (span == 0 || read_only_) {
        return {};
    }
    if (writeback_ != Writeback::kernel) {
        auto written = RegionAccess::write_back_private(*this, op, offset, length);
        if (!written) {
            return std::unexpected(written.error());
        }
        unflushed_ = unflushed_ || *written > 0;
    }
    const std::uint64_t file_begin = RegionAccess::file_offset_of(*this, begin);
    const std::size_t file_span = std::min(begin + span, RegionAccess::storage_end(*this)) - begin;
    if (::sync_file_range(fd_, static_cast<off_t>(file_begin), static_cast<off_t>(file_span), SYNC_FILE_RANGE_WRITE) !=
        0) {
        return make_sys_error(errno, "{}: offset={} length={}: cannot start write-back of {}", op, offset, length,
                              path_.string());
    }
    return {};
}

}  // namespace strata
