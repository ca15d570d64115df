// SPDX-License-Identifier: MIT
// Creating storage and combined regions: plan where the memory and storage
// parts lie, open the file, reserve the range, map each part. An error at any
// step after the file is opened rolls the file back; the RAII pieces (range,
// tracker, fill) undo the rest.
#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <cmath>

#include "core/log.hpp"
#include "region/background_fill.hpp"
#include "region/parallel_read.hpp"
#include "region/posix.hpp"
#include "region/region_impl.hpp"
#include "region/written_pages.hpp"

namespace strata {

using posix::round_down_to_page;
using posix::round_up_to_page;
using region_detail::check_permissions;
using region_detail::check_size;
using region_detail::protection;

namespace {

/// Where the parts of a combined region lie, in bytes of the region.
struct CombinedLayout {
    std::size_t mapped = 0;          ///< the region's size rounded up to pages
    std::size_t storage_begin = 0;   ///< offset of the storage part
    std::size_t storage_length = 0;  ///< its length (the last page may be partial)
    Writeback writeback = Writeback::kernel;

    [[nodiscard]] std::size_t storage_mapped() const { return round_up_to_page(storage_length); }
};

/// The mappings of a combined region while it is built; whatever is not
/// released into the Region is undone, fill first, range last.
struct CombinedParts {
    posix::UniqueMapping range;
    posix::UniqueFd tracker;
    std::unique_ptr<background_fill::Fill> fill;  // declared after tracker: stops before it closes
    bool filled = false;
};

/// True if the file holds data in [offset, offset+length): written bytes, or
/// pages in the page cache. Reserved (unwritten) space and holes are not data.
/// Where SEEK_DATA is not supported (a block device), everything is data.
bool holds_data(int fd, std::uint64_t offset, std::size_t length) {
    const off_t found = ::lseek(fd, static_cast<off_t>(offset), SEEK_DATA);
    if (found < 0) {
        return errno != ENXIO;  // ENXIO: no data from offset to the end of the file
    }
    return static_cast<std::uint64_t>(found) < offset + length;
}

/// The reader threads of this storage part's fill: StorageOptions::fill_readers,
/// else twice the CPUs this process may run on (its affinity mask; the online
/// CPUs if that cannot be read), at most 8.
unsigned fill_readers(const StorageOptions& storage) noexcept {
    if (storage.fill_readers != 0) {
        return storage.fill_readers;
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    if (::sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) {
        return fill_readers_for(static_cast<unsigned>(CPU_COUNT(&set)), 1);
    }
    const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
    return fill_readers_for(online > 0 ? static_cast<unsigned>(online) : 1U, 1);
}

/// Reads the file's bytes into `part`, anonymous memory whose stores the
/// kernel tracks, then takes the pages the reads wrote, so that write-back
/// sees only the program's stores.
Result<void> fill_storage_part(const char* op, int fd, std::byte* part, std::size_t length, std::uint64_t offset,
                               const std::filesystem::path& path, unsigned streams) {
    if (auto read = parallel_read::read(op, fd, part, length, offset, path, streams); !read) {
        return read;
    }
    if (auto taken = written_pages::take(op, part, 0, round_up_to_page(length)); !taken) {
        return std::unexpected(taken.error());
    }
    return {};
}

/// Bytes of the memory part: a page multiple, or `mapped` when all of it is memory.
Result<std::size_t> memory_part_bytes(const char* op, std::size_t size, std::size_t mapped, const Factor& factor) {
    if (factor.is_auto()) {
        auto budget = current_memory_budget();
        if (!budget) {
            return std::unexpected(budget.error());
        }
        const std::size_t memory_part = budget->usable >= mapped ? mapped : round_down_to_page(budget->usable);
        detail::log().debug("{}: factor=auto keeps {} of {} bytes in memory (usable {}, margin {}{})", op, memory_part,
                            size, budget->usable, budget->margin,
                            budget->cgroup_limited ? ", cgroup limit applies" : "");
        return memory_part;
    }
    const double f = factor.fraction();
    if (!std::isfinite(f) || f < 0.0 || f > 1.0) {
        return make_error(Errc::invalid_argument, "{}: factor={}: outside [0, 1]", op, f);
    }
    return f >= 1.0 ? mapped : round_down_to_page(static_cast<std::size_t>(f * static_cast<double>(size)));
}

/// Validates the options and places the storage part before or after the memory part.
Result<CombinedLayout> plan_combined(const char* op, std::size_t size, const CombinedOptions& options) {
    if (auto ok = check_size(op, size); !ok) {
        return std::unexpected(ok.error());
    }
    if (auto ok = check_permissions(op, options.storage.permissions); !ok) {
        return std::unexpected(ok.error());
    }
    CombinedLayout layout;
    layout.mapped = round_up_to_page(size);
    auto memory_part = memory_part_bytes(op, size, layout.mapped, options.factor);
    if (!memory_part) {
        return std::unexpected(memory_part.error());
    }
    if (*memory_part < layout.mapped) {
        if (options.order == Order::memory_first) {
            layout.storage_begin = *memory_part;
            layout.storage_length = size - *memory_part;
        } else {
            layout.storage_begin = 0;
            layout.storage_length = *memory_part == 0 ? size : layout.mapped - *memory_part;
        }
    }
    if (layout.storage_length > 0 && options.storage.read_only && *memory_part > 0) {
        return make_error(Errc::invalid_argument,
                          "{}: read_only=true: a read-only region cannot have a memory part (factor must be 0)", op);
    }
    layout.writeback = options.storage.read_only ? Writeback::kernel : options.storage.writeback;
    return layout;
}

/// The storage part of a direct region as anonymous memory: it reads the same
/// zeros as a file without data, and stores into it take no page-cache faults.
/// A file with data is read into it (in the background where the kernel
/// tracks stores). Returns whether the file must be mapped over it instead:
/// its bytes, where this kernel cannot track stores to memory they were read into.
Result<bool> map_anonymous_storage(const char* op, std::size_t size, const CombinedLayout& layout,
                                   const StorageOptions& storage, int fd, bool has_data, CombinedParts& parts) {
    std::byte* part = parts.range.get() + layout.storage_begin;
    const std::size_t length = layout.storage_mapped();
    if (::mmap(part, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED) {
        return make_sys_error(errno, "{}: size={}: cannot map the storage part", op, size);
    }
    (void)::madvise(part, length, MADV_HUGEPAGE);  // best effort
    if (has_data) {
        parts.tracker = written_pages::track(part, length, true);
    }
    if (parts.tracker.get() >= 0) {
        auto started = background_fill::Fill::start(op, parts.tracker.get(), fd, part, layout.storage_length,
                                                    storage.offset, storage.path, fill_readers(storage));
        if (!started) {
            return std::unexpected(started.error());
        }
        parts.fill = std::move(*started);
    } else {
        parts.tracker = written_pages::track(part, length);
    }
    parts.filled = has_data && parts.tracker.get() >= 0;
    if (parts.filled && parts.fill == nullptr) {
        if (auto filling = fill_storage_part(op, fd, part, layout.storage_length, storage.offset, storage.path,
                                             fill_readers(storage));
            !filling) {
            return std::unexpected(filling.error());
        }
    }
    return has_data && !parts.filled;
}

/// The storage part mapped from the file: shared with the page cache under
/// kernel write-back, private (copy on write) otherwise.
Result<void> map_file_storage(const char* op, std::size_t size, const CombinedLayout& layout,
                              const StorageOptions& storage, int fd, CombinedParts& parts) {
    std::byte* part = parts.range.get() + layout.storage_begin;
    const std::size_t length = layout.storage_mapped();
    const int sharing = layout.writeback == Writeback::kernel ? MAP_SHARED : MAP_PRIVATE;
    if (::mmap(part, length, protection(storage.read_only), sharing | MAP_FIXED, fd,
               static_cast<off_t>(storage.offset)) == MAP_FAILED) {
        return make_sys_error(errno, "{}: size={}: cannot map the storage part", op, size);
    }
    // Without this, fault read-ahead fills the page cache with large
    // folios (ext4 on recent kernels) and one store dirties the whole
    // folio, so sync() would write up to 512 times what changed. Random
    // advice keeps faults at single pages: dirty tracking at page size.
    // advise(sequential) trades that back for read-ahead.
    if (layout.writeback == Writeback::kernel && !storage.read_only && ::madvise(part, length, MADV_RANDOM) != 0) {
        return make_sys_error(errno, "{}: size={}: cannot set page-granular advice on the storage part", op, size);
    }
    return {};
}

/// The memory part at `at`: private anonymous memory, or the file `shared_fd`
/// (grown to `length` if shorter) mapped shared (CombinedOptions::shared_memory_fd).
Result<void> map_memory_part(const char* op, std::size_t size, std::byte* at, std::size_t length, int shared_fd) {
    if (shared_fd < 0) {
        if (::mmap(at, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED) {
            return make_sys_error(errno, "{}: size={}: cannot map the memory part", op, size);
        }
        return {};
    }
    struct stat st {};
    if (::fstat(shared_fd, &st) != 0) {
        return make_sys_error(errno, "{}: size={}: shared_memory_fd={}: cannot stat it", op, size, shared_fd);
    }
    if (static_cast<std::uint64_t>(st.st_size) < length && ::ftruncate(shared_fd, static_cast<off_t>(length)) != 0) {
        return make_sys_error(errno, "{}: size={}: shared_memory_fd={}: cannot size it to {} bytes", op, size,
                              shared_fd, length);
    }
    if (::mmap(at, length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, shared_fd, 0) == MAP_FAILED) {
        return make_sys_error(errno, "{}: size={}: cannot map the shared memory part", op, size);
    }
    return {};
}

/// Reserves the whole range first so both parts land side by side, then maps
/// the memory part and the storage part into it.
Result<void> map_combined(const char* op, std::size_t size, const CombinedLayout& layout, const StorageOptions& storage,
                          const posix::StorageFile& file, int shared_memory_fd, CombinedParts& parts) {
    void* reserved = ::mmap(nullptr, layout.mapped, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (reserved == MAP_FAILED) {
        return make_sys_error(errno, "{}: size={}: cannot reserve the address range", op, size);
    }
    parts.range = posix::UniqueMapping(reserved, layout.mapped);
    const std::size_t storage_mapped = layout.storage_mapped();
    const std::size_t memory_begin = layout.storage_begin == 0 ? storage_mapped : 0;
    const std::size_t memory_mapped = layout.mapped - storage_mapped;
    if (memory_mapped > 0) {
        if (auto mapped = map_memory_part(op, size, parts.range.get() + memory_begin, memory_mapped, shared_memory_fd);
            !mapped) {
            return mapped;
        }
    }
    if (storage_mapped == 0) {
        return {};
    }
    const int fd = file.fd.get();
    bool map_file = true;
    if (layout.writeback == Writeback::direct) {
        const bool has_data = holds_data(fd, storage.offset, layout.storage_length);
        if (!has_data || storage.fill) {
            auto mapped = map_anonymous_storage(op, size, layout, storage, fd, has_data, parts);
            if (!mapped) {
                return std::unexpected(mapped.error());
            }
            map_file = *mapped;
        }
    }
    return map_file ? map_file_storage(op, size, layout, storage, fd, parts) : Result<void>{};
}

}  // namespace

Result<Region> Region::storage(std::size_t size, const StorageOptions& options) {
    CombinedOptions combined{.storage = options, .factor = Factor::fixed(0.0), .order = Order::memory_first};
    auto r = Region::combined(size, combined);
    if (r) {
        r->kind_ = RegionKind::storage;
    } else {
        // Report the operation the caller used.
        auto& message = r.error().message;
        if (message.starts_with("Region::combined")) {
            message.replace(0, 16, "Region::storage");
        }
    }
    return r;
}

Result<Region> Region::combined(std::size_t size, const CombinedOptions& options) {
    constexpr const char* op = "Region::combined";
    auto layout = plan_combined(op, size, options);
    if (!layout) {
        return std::unexpected(layout.error());
    }
    posix::StorageFile file;
    if (layout->storage_length > 0) {
        auto opened = posix::open_storage(op, options.storage, layout->storage_length);
        if (!opened) {
            return std::unexpected(opened.error());
        }
        file = std::move(*opened);
    }
    CombinedParts parts;
    if (auto mapped = map_combined(op, size, *layout, options.storage, file, options.shared_memory_fd, parts);
        !mapped) {
        file.roll_back(options.storage.path);
        return std::unexpected(mapped.error());
    }

    Region r;
    r.base_ = parts.range.release();
    r.size_ = size;
    r.mapped_ = layout->mapped;
    r.tracker_ = parts.tracker.release();
    r.filled_ = parts.filled;
    r.fill_ = std::move(parts.fill);
    r.kind_ = RegionKind::combined;
    r.writeback_ = layout->writeback;
    r.fd_ = file.fd.release();
    r.is_block_device_ = file.is_block_device;
    r.read_only_ = options.storage.read_only;
    r.created_file_ = file.origin.created;
    r.original_size_ = file.origin.original_size;
    r.grown_to_ = file.origin.grown_to;
    r.file_offset_ = options.storage.offset;
    r.storage_begin_ = layout->storage_begin;
    r.storage_length_ = layout->storage_length;
    if (layout->storage_length > 0) {
        r.path_ = options.storage.path;
    }
    return r;
}

unsigned fill_readers_for(unsigned cpus, unsigned sharers) noexcept {
    constexpr unsigned kMostReaders = 8;
    return std::clamp(2 * std::max(cpus, 1U) / std::max(sharers, 1U), 1U, kMostReaders);
}

}  // namespace strata
