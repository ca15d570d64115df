// SPDX-License-Identifier: MIT
// Creating and closing regions. Every factory validates first, then builds
// with RAII pieces (descriptor, address-space reservation, file rollback) so
// an error at any step leaves nothing behind.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.hpp"
#include "region/background_fill.hpp"
#include "region/posix.hpp"
#include "region/region_impl.hpp"

namespace strata {

using posix::page_size;
using posix::round_up_to_page;
using region_detail::check_permissions;
using region_detail::check_size;
using region_detail::protection;

namespace {

constexpr std::size_t max_shared_name = 200;

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

}  // namespace

namespace region_detail {

Result<void> check_size(const char* op, std::size_t size) {
    if (size == 0) {
        return make_error(Errc::invalid_argument, "{}: size=0: a region needs at least one byte", op);
    }
    if (size > (std::size_t{1} << 56)) {
        return make_error(Errc::invalid_argument, "{}: size={}: larger than the 64 PiB address space limit", op, size);
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

int protection(bool read_only) {
    return read_only ? PROT_READ : PROT_READ | PROT_WRITE;
}

}  // namespace region_detail

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
