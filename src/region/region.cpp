// SPDX-License-Identifier: MIT
// Creating and closing regions. Every factory validates first, then builds
// with RAII pieces (descriptor, address-space reservation, file rollback) so
// an error at any step leaves nothing behind.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmath>

#include "core/log.hpp"
#include "region/background_fill.hpp"
#include "region/parallel_read.hpp"
#include "region/posix.hpp"
#include "region/region_impl.hpp"
#include "region/written_pages.hpp"

namespace strata {

using posix::page_size;
using posix::round_down_to_page;
using posix::round_up_to_page;

namespace {

constexpr std::size_t max_shared_name = 200;

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

Result<void> check_size(const char* op, std::size_t size) {
    if (size == 0) {
        return make_error(Errc::invalid_argument, "{}: size=0: a region needs at least one byte", op);
    }
    if (size > (std::size_t{1} << 56)) {
        return make_error(Errc::invalid_argument, "{}: size={}: larger than the 64 PiB address space limit", op, size);
    }
    return {};
}

Result<void> check_shared_name(const char* op, const std::string& name) {
    if (name.empty() || name.size() > max_shared_name) {
        return make_error(Errc::invalid_argument, "{}: name=\"{}\": length {} is outside 1..{}", op, name, name.size(),
                          max_shared_name);
    }
    if (name.find('/') != std::string::npos || name == "." || name == ".." || name.find('\0') != std::string::npos) {
        return make_error(Errc::invalid_argument,
                          "{}: name=\"{}\": a segment name may not contain '/' nor be '.' or '..'", op, name);
    }
    return {};
}

Result<void> check_permissions(const char* op, mode_t permissions) {
    if ((permissions & ~mode_t{07777}) != 0) {
        return make_error(Errc::invalid_argument, "{}: permissions={:o}: not a file mode (at most 07777)", op,
                          permissions);
    }
    return {};
}

/// Reads the file's bytes into `part`, anonymous memory whose stores the
/// kernel tracks, then takes the pages the reads wrote, so that write-back
/// sees only the program's stores.
Result<void> fill_storage_part(const char* op, int fd, std::byte* part, std::size_t length, std::uint64_t offset,
                               const std::filesystem::path& path) {
    if (auto read = parallel_read::read(op, fd, part, length, offset, path); !read) {
        return read;
    }
    if (auto taken = written_pages::take(op, part, 0, round_up_to_page(length)); !taken) {
        return std::unexpected(taken.error());
    }
    return {};
}

int protection(bool read_only) {
    return read_only ? PROT_READ : PROT_READ | PROT_WRITE;
}

}  // namespace

Region::Region(Region&& other) noexcept {
    *this = std::move(other);
}

Region& Region::operator=(Region&& other) noexcept {
    if (this != &other) {
        release();
        base_ = std::exchange(other.base_, nullptr);
        size_ = std::exchange(other.size_, 0);
        mapped_ = std::exchange(other.mapped_, 0);
        kind_ = other.kind_;
        writeback_ = other.writeback_;
        fd_ = std::exchange(other.fd_, -1);
        tracker_ = std::exchange(other.tracker_, -1);
        unwritten_ = std::move(other.unwritten_);
        unflushed_ = other.unflushed_;
        filled_ = other.filled_;
        fill_ = std::move(other.fill_);
        is_block_device_ = other.is_block_device_;
        read_only_ = other.read_only_;
        created_file_ = other.created_file_;
        original_size_ = other.original_size_;
        grown_to_ = other.grown_to_;
        file_offset_ = other.file_offset_;
        storage_begin_ = other.storage_begin_;
        storage_length_ = std::exchange(other.storage_length_, 0);
        path_ = std::move(other.path_);
        name_ = std::move(other.name_);
    }
    return *this;
}

Region::~Region() {
    release();
}

void Region::release() noexcept {
    if (base_ == nullptr) {
        return;
    }
    if (auto closed = close(); !closed) {
        detail::log().error("closing a region of {} bytes: {}", size_, closed.error().what());
    }
}

std::size_t Region::memory_bytes() const noexcept {
    return size_ - storage_length_;
}
std::size_t Region::storage_bytes() const noexcept {
    return storage_length_;
}
const std::filesystem::path& Region::path() const noexcept {
    return path_;
}

bool Region::fill_complete() const noexcept {
    return fill_ == nullptr || fill_->complete();
}

Result<void> Region::wait_filled() {
    return fill_ == nullptr ? Result<void>{} : fill_->wait("Region::wait_filled");
}

Result<Region> Region::memory(std::size_t size) {
    constexpr const char* op = "Region::memory";
    if (auto ok = check_size(op, size); !ok) {
        return std::unexpected(ok.error());
    }
    const std::size_t mapped = round_up_to_page(size);
    void* base = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) {
        return make_sys_error(errno, "{}: size={}: cannot map anonymous memory", op, size);
    }
    Region r;
    r.base_ = static_cast<std::byte*>(base);
    r.size_ = size;
    r.mapped_ = mapped;
    r.kind_ = RegionKind::memory;
    return r;
}

Result<Region> Region::shared(std::size_t size, const SharedOptions& options) {
    constexpr const char* op = "Region::shared";
    if (size == 0 && options.mode != OpenMode::open_only) {
        return make_error(Errc::invalid_argument, "{}: size=0: only open_only may take the size of an existing segment",
                          op);
    }
    if (size != 0) {
        if (auto ok = check_size(op, size); !ok) {
            return std::unexpected(ok.error());
        }
    }
    if (auto ok = check_shared_name(op, options.name); !ok) {
        return std::unexpected(ok.error());
    }
    if (auto ok = check_permissions(op, options.permissions); !ok) {
        return std::unexpected(ok.error());
    }
    const std::string shm_name = "/" + options.name;
    const int access = options.read_only ? O_RDONLY : O_RDWR;
    bool created = false;
    posix::UniqueFd fd;
    if (options.mode != OpenMode::open_only && !options.read_only) {
        fd = posix::UniqueFd(::shm_open(shm_name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, options.permissions));
        created = fd.get() >= 0;
        if (!created && (errno != EEXIST || options.mode == OpenMode::create_only)) {
            return make_sys_error(errno, "{}: name={}: cannot create the segment", op, options.name);
        }
    }
    if (!created) {
        fd = posix::UniqueFd(::shm_open(shm_name.c_str(), access | O_CLOEXEC, 0));
        if (fd.get() < 0) {
            return make_sys_error(errno, "{}: name={}: cannot open the segment", op, options.name);
        }
    }
    auto undo = [&] {
        if (created) {
            ::shm_unlink(shm_name.c_str());
        }
    };
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) {
        const int err = errno;
        undo();
        return make_sys_error(err, "{}: name={}: cannot stat the segment", op, options.name);
    }
    const auto existing = static_cast<std::size_t>(st.st_size);
    if (size == 0) {
        if (existing == 0) {
            return make_error(Errc::invalid_argument, "{}: size=0: segment {} is empty, so its size cannot be used", op,
                              options.name);
        }
        size = existing;
    }
    if (existing < size) {
        if (options.mode == OpenMode::open_only || options.read_only) {
            // Opening must not resize a segment other processes already map.
            return make_error(Errc::invalid_argument, "{}: size={}: segment {} holds only {} bytes", op, size,
                              options.name, existing);
        }
        // A creator racing with us grows it to the same size; fallocate only grows.
        if (const int err = ::posix_fallocate(fd.get(), 0, static_cast<off_t>(size)); err != 0) {
            undo();
            return make_sys_error(err, "{}: name={}: cannot reserve {} bytes in /dev/shm", op, options.name, size);
        }
    }
    const std::size_t mapped = round_up_to_page(size);
    void* base = ::mmap(nullptr, mapped, protection(options.read_only), MAP_SHARED, fd.get(), 0);
    if (base == MAP_FAILED) {
        const int err = errno;
        undo();
        return make_sys_error(err, "{}: name={}: cannot map {} bytes", op, options.name, size);
    }
    Region r;
    r.base_ = static_cast<std::byte*>(base);
    r.size_ = size;
    r.mapped_ = mapped;
    r.kind_ = RegionKind::shared;
    r.fd_ = fd.release();
    r.read_only_ = options.read_only;
    r.name_ = options.name;
    return r;
}

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
    if (auto ok = check_size(op, size); !ok) {
        return std::unexpected(ok.error());
    }
    if (auto ok = check_permissions(op, options.storage.permissions); !ok) {
        return std::unexpected(ok.error());
    }
    const std::size_t mapped = round_up_to_page(size);
    std::size_t memory_part = 0;  // page multiple, or `mapped` when all of it is memory
    if (options.factor.is_auto()) {
        auto budget = current_memory_budget();
        if (!budget) {
            return std::unexpected(budget.error());
        }
        memory_part = budget->usable >= mapped ? mapped : round_down_to_page(budget->usable);
        detail::log().debug("{}: factor=auto keeps {} of {} bytes in memory (usable {}, margin {}{})", op, memory_part,
                            size, budget->usable, budget->margin,
                            budget->cgroup_limited ? ", cgroup limit applies" : "");
    } else {
        const double f = options.factor.fraction();
        if (!std::isfinite(f) || f < 0.0 || f > 1.0) {
            return make_error(Errc::invalid_argument, "{}: factor={}: outside [0, 1]", op, f);
        }
        memory_part = f >= 1.0 ? mapped : round_down_to_page(static_cast<std::size_t>(f * static_cast<double>(size)));
    }
    // Region offsets of the storage part, in bytes of the region (the last page may be partial).
    std::size_t storage_begin = 0;
    std::size_t storage_length = 0;
    if (memory_part < mapped) {
        if (options.order == Order::memory_first) {
            storage_begin = memory_part;
            storage_length = size - memory_part;
        } else {
            storage_begin = 0;
            storage_length = memory_part == 0 ? size : mapped - memory_part;
        }
    }
    if (storage_length > 0 && options.storage.read_only && memory_part > 0) {
        return make_error(Errc::invalid_argument,
                          "{}: read_only=true: a read-only region cannot have a memory part (factor must be 0)", op);
    }

    posix::StorageFile file;
    if (storage_length > 0) {
        auto opened = posix::open_storage(op, options.storage, storage_length);
        if (!opened) {
            return std::unexpected(opened.error());
        }
        file = std::move(*opened);
    }
    auto fail = [&](int err, std::string_view what) {
        file.roll_back(options.storage.path);
        return make_sys_error(err, "{}: size={}: {}", op, size, what);
    };

    // Reserve the whole range first so both parts land side by side.
    void* reserved = ::mmap(nullptr, mapped, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (reserved == MAP_FAILED) {
        return fail(errno, "cannot reserve the address range");
    }
    posix::UniqueMapping range(reserved, mapped);
    auto* base = range.get();
    const std::size_t storage_mapped = round_up_to_page(storage_length);
    const std::size_t memory_begin = storage_begin == 0 ? storage_mapped : 0;
    const std::size_t memory_mapped = mapped - storage_mapped;
    if (memory_mapped > 0 && ::mmap(base + memory_begin, memory_mapped, PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED) {
        return fail(errno, "cannot map the memory part");
    }
    const Writeback writeback = options.storage.read_only ? Writeback::kernel : options.storage.writeback;
    posix::UniqueFd tracker;
    std::unique_ptr<background_fill::Fill> fill;  // declared after tracker: stops before it closes
    bool filled = false;
    const bool has_data = storage_mapped > 0 && writeback == Writeback::direct &&
                          holds_data(file.fd.get(), options.storage.offset, storage_length);
    bool map_file = storage_mapped > 0;
    if (storage_mapped > 0 && writeback == Writeback::direct && (!has_data || options.storage.fill)) {
        // Nothing to show from the file: anonymous memory reads the same
        // zeros, and stores into it take no page-cache faults. With fill,
        // the file's bytes are read into it first.
        if (::mmap(base + storage_begin, storage_mapped, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED) {
            return fail(errno, "cannot map the storage part");
        }
        (void)::madvise(base + storage_begin, storage_mapped, MADV_HUGEPAGE);  // best effort
        if (has_data) {
            tracker = written_pages::track(base + storage_begin, storage_mapped, true);
        }
        if (tracker.get() >= 0) {
            auto started = background_fill::Fill::start(op, tracker.get(), file.fd.get(), base + storage_begin,
                                                        storage_length, options.storage.offset, options.storage.path);
            if (!started) {
                file.roll_back(options.storage.path);
                return std::unexpected(started.error());
            }
            fill = std::move(*started);
        } else {
            tracker = written_pages::track(base + storage_begin, storage_mapped);
        }
        filled = has_data && tracker.get() >= 0;
        // The file's bytes, where this kernel cannot track stores to memory they
        // were read into, are mapped from the file instead (below).
        map_file = has_data && !filled;
        if (filled && fill == nullptr) {
            if (auto filling = fill_storage_part(op, file.fd.get(), base + storage_begin, storage_length,
                                                 options.storage.offset, options.storage.path);
                !filling) {
                file.roll_back(options.storage.path);
                return std::unexpected(filling.error());
            }
        }
    }
    if (map_file) {
        const int sharing = writeback == Writeback::kernel ? MAP_SHARED : MAP_PRIVATE;
        if (::mmap(base + storage_begin, storage_mapped, protection(options.storage.read_only), sharing | MAP_FIXED,
                   file.fd.get(), static_cast<off_t>(options.storage.offset)) == MAP_FAILED) {
            return fail(errno, "cannot map the storage part");
        }
        // Without this, fault read-ahead fills the page cache with large
        // folios (ext4 on recent kernels) and one store dirties the whole
        // folio, so sync() would write up to 512 times what changed. Random
        // advice keeps faults at single pages: dirty tracking at page size.
        // advise(sequential) trades that back for read-ahead.
        if (writeback == Writeback::kernel && !options.storage.read_only &&
            ::madvise(base + storage_begin, storage_mapped, MADV_RANDOM) != 0) {
            return fail(errno, "cannot set page-granular advice on the storage part");
        }
    }

    Region r;
    r.base_ = range.release();
    r.size_ = size;
    r.mapped_ = mapped;
    r.tracker_ = tracker.release();
    r.filled_ = filled;
    r.fill_ = std::move(fill);
    r.kind_ = RegionKind::combined;
    r.writeback_ = writeback;
    r.fd_ = file.fd.release();
    r.is_block_device_ = file.is_block_device;
    r.read_only_ = options.storage.read_only;
    r.created_file_ = file.origin.created;
    r.original_size_ = file.origin.original_size;
    r.grown_to_ = file.origin.grown_to;
    r.file_offset_ = options.storage.offset;
    r.storage_begin_ = storage_begin;
    r.storage_length_ = storage_length;
    if (storage_length > 0) {
        r.path_ = options.storage.path;
    }
    return r;
}

Result<void> Region::close(CloseOptions options) {
    constexpr const char* op = "Region::close";
    if (base_ == nullptr) {
        return make_error(Errc::invalid_argument, "{}: the region is not open", op);
    }
    if (options.discard && storage_length_ > 0 && writeback_ == Writeback::kernel && !read_only_) {
        return make_error(Errc::invalid_argument,
                          "{}: discard=true: region on {} uses kernel write-back, which may already have written "
                          "the changes; create it with writeback=explicit_sync to discard",
                          op, path_.string());
    }
    if (options.discard && kind_ == RegionKind::shared) {
        return make_error(Errc::invalid_argument,
                          "{}: discard=true: stores to shared segment {} are visible to other processes at once", op,
                          name_);
    }
    if (options.unlink && is_block_device_) {
        return make_error(Errc::invalid_argument, "{}: unlink=true: {} is a block device, not a file", op,
                          path_.string());
    }
    if (options.roll_back && options.unlink) {
        return make_error(Errc::invalid_argument,
                          "{}: roll_back=true with unlink=true: roll_back already removes a file the region created "
                          "and keeps one it did not",
                          op);
    }
    Result<void> result;
    if (fill_ != nullptr) {
        // A fill still running is stopped; a failed one leaves nothing to write back.
        result = fill_->status(op);
        fill_.reset();
    }
    if (result && storage_length_ > 0 && writeback_ != Writeback::kernel && !options.discard && !options.roll_back) {
        if (auto written = RegionAccess::write_back_private(*this, op, 0, size_); !written) {
            result = std::unexpected(written.error());
        }
    }
    ::munmap(base_, mapped_);
    base_ = nullptr;
    if (tracker_ >= 0) {
        ::close(tracker_);
        tracker_ = -1;
    }
    unwritten_.clear();
    if (options.roll_back && storage_length_ > 0 && !is_block_device_ && !read_only_) {
        const posix::FileOrigin origin{
            .created = created_file_, .original_size = original_size_, .grown_to = grown_to_};
        origin.roll_back(fd_, path_);
    }
    if (fd_ >= 0) {
        ::close(fd_);
        fd_ = -1;
    }
    if (options.unlink) {
        if (kind_ == RegionKind::shared) {
            const std::string shm_name = "/" + name_;
            if (::shm_unlink(shm_name.c_str()) != 0 && result) {
                result = make_sys_error(errno, "{}: unlink=true: cannot remove segment {}", op, name_);
            }
        } else if (!path_.empty() && ::unlink(path_.c_str()) != 0 && result) {
            result = make_sys_error(errno, "{}: unlink=true: cannot remove {}", op, path_.string());
        }
    }
    storage_length_ = 0;
    return result;
}

}  // namespace strata
