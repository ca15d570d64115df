// SPDX-License-Identifier: MIT
#include "region/posix.hpp"
#include <algorithm>

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <string>

#include "core/file_owner.hpp"

namespace strata::posix {

std::size_t page_size() noexcept {
    static const auto size = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    return size;
}

UniqueFd reopen_direct(int fd, int access) {
    const std::string self = "/proc/self/fd/" + std::to_string(fd);
    return UniqueFd(::open(self.c_str(), access | O_DIRECT | O_CLOEXEC));
}

void UniqueFd::reset() noexcept {
    if (fd_ >= 0) {
        ::close(fd_);
        fd_ = -1;
    }
}

void UniqueMapping::reset() noexcept {
    if (base_ != nullptr) {
        ::munmap(base_, length_);
        base_ = nullptr;
        length_ = 0;
    }
}

void FileOrigin::roll_back(int fd, const std::filesystem::path& path) const noexcept {
    if (fd < 0) {
        return;
    }
    struct stat open_file {};
    if (::fstat(fd, &open_file) != 0 || !S_ISREG(open_file.st_mode)) {
        return;
    }
    const auto size = static_cast<std::uint64_t>(open_file.st_size);
    if (size != grown_to) {
        return;  // someone else grew the file further and may be using it
    }
    if (created) {
        // Remove the name only while it still leads to the file this call made.
        struct stat named {};
        if (::stat(path.c_str(), &named) == 0 && named.st_dev == open_file.st_dev && named.st_ino == open_file.st_ino) {
            ::unlink(path.c_str());
        }
        return;
    }
    if (grown_to > original_size) {
        // A failure here cannot be reported better than the error already
        // being returned, or the roll-back the caller asked for.
        (void)::ftruncate(fd, static_cast<off_t>(original_size));
    }
}

void StorageFile::roll_back(const std::filesystem::path& path) noexcept {
    struct stat st {};
    if (is_block_device || fd.get() < 0 || ::fstat(fd.get(), &st) != 0) {
        return;
    }
    FileOrigin failed = origin;
    failed.grown_to = static_cast<std::uint64_t>(st.st_size);
    failed.roll_back(fd.get(), path);
}

namespace {

Result<void> check_range_fits(const char* op, const std::filesystem::path& path, std::uint64_t offset,
                              std::uint64_t length, std::uint64_t available, const char* what) {
    if (offset > available || length > available - offset) {
        return make_error(Errc::invalid_argument, "{}: offset={}: the range [{}, {}) ends beyond the {} bytes of {} {}",
                          op, offset, offset, offset + length, available, what, path.string());
    }
    return {};
}

// The file at `path` is a symbolic link: O_NOFOLLOW refused it (ELOOP).
std::unexpected<Error> refuse_link(const char* op, const std::filesystem::path& path) {
    return make_error(Errc::permission_denied,
                      "{}: path={}: is a symbolic link: refused (storage files are opened without following links, "
                      "so another user cannot redirect the region; name the file itself)",
                      op, path.string());
}

Result<StorageFile> open_file(const char* op, const StorageOptions& options) {
    const auto& path = options.path;
    StorageFile file;
    if (options.read_only) {
        file.fd = UniqueFd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
        if (file.fd.get() < 0) {
            return errno == ELOOP ? refuse_link(op, path)
                                  : make_sys_error(errno, "{}: path={}: cannot open read-only", op, path.string());
        }
        return file;
    }
    // O_EXCL first so that a failure later knows whether the file is ours to remove.
    file.fd = UniqueFd(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                              static_cast<mode_t>(options.permissions)));
    if (file.fd.get() >= 0) {
        file.origin.created = true;
        return file;
    }
    if (errno != EEXIST) {
        return make_sys_error(errno, "{}: path={}: cannot create the file", op, path.string());
    }
    if (options.create_only) {
        return make_error(Errc::already_exists,
                          "{}: path={}: exists already (create_only: an existing file or link is never opened)", op,
                          path.string());
    }
    file.fd = UniqueFd(::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC));
    if (file.fd.get() < 0) {
        return errno == ELOOP ? refuse_link(op, path)
                              : make_sys_error(errno, "{}: path={}: cannot open for writing", op, path.string());
    }
    return file;
}

// An existing regular file of another user could have been planted to read
// or change what the region holds: refused unless the caller says otherwise.
Result<void> check_owner(const char* op, const StorageOptions& options, const struct stat& st) {
    if (!S_ISREG(st.st_mode) || st.st_uid == ::geteuid() || options.allow_other_owner) {
        return {};
    }
    return make_error(Errc::permission_denied,
                      "{}: path={}: the existing file is {}, not by this user (uid {}): refused, because its owner "
                      "can read and change what the region holds; set allow_other_owner (MPI hint "
                      "storage_alloc_allow_other_owner=true) to use it anyway",
                      op, options.path.string(), detail::describe_owner(st), ::geteuid());
}

}  // namespace

Result<StorageFile> open_storage(const char* op, const StorageOptions& options, std::uint64_t length) {
    const auto& path = options.path;
    const std::uint64_t offset = options.offset;
    const bool read_only = options.read_only;
    if (path.empty()) {
        return make_error(Errc::invalid_argument, "{}: path=\"\": a storage region needs a file or device path", op);
    }
    if (offset % page_size() != 0) {
        return make_error(Errc::invalid_argument, "{}: offset={}: not a multiple of the page size {}", op, offset,
                          page_size());
    }
    auto opened = open_file(op, options);
    if (!opened) {
        return std::unexpected(opened.error());
    }
    StorageFile file = std::move(*opened);
    struct stat st {};
    if (::fstat(file.fd.get(), &st) != 0) {
        const int err = errno;
        file.roll_back(path);
        return make_sys_error(err, "{}: path={}: cannot stat", op, path.string());
    }
    if (auto owner = check_owner(op, options, st); !owner) {
        return std::unexpected(owner.error());  // not created by this call: nothing to undo
    }
    if (S_ISBLK(st.st_mode)) {
        file.is_block_device = true;
        if (::ioctl(file.fd.get(), BLKGETSIZE64, &file.device_size) != 0) {
            return make_sys_error(errno, "{}: path={}: cannot read the device size", op, path.string());
        }
        if (auto fits = check_range_fits(op, path, offset, length, file.device_size, "device"); !fits) {
            return std::unexpected(fits.error());
        }
        return file;
    }
    if (!S_ISREG(st.st_mode)) {
        file.roll_back(path);
        return make_error(Errc::invalid_argument, "{}: path={}: not a regular file or a block device", op,
                          path.string());
    }
    file.origin.original_size = static_cast<std::uint64_t>(st.st_size);
    file.origin.grown_to = file.origin.original_size;
    if (read_only) {
        if (auto fits = check_range_fits(op, path, offset, length, file.origin.original_size, "file"); !fits) {
            return std::unexpected(fits.error());
        }
        return file;
    }
    if (offset > static_cast<std::uint64_t>(INT64_MAX) - length) {
        file.roll_back(path);
        return make_error(Errc::invalid_argument, "{}: offset={}: offset + size overflows a file offset", op, offset);
    }
    // Reserve the blocks now: a full file system must fail here, not as a
    // SIGBUS on the first store to a hole.
    if (const int err = ::posix_fallocate(file.fd.get(), static_cast<off_t>(offset), static_cast<off_t>(length));
        err != 0) {
        file.roll_back(path);
        return make_sys_error(err, "{}: path={}: cannot reserve {} bytes at offset {}", op, path.string(), length,
                              offset);
    }
    file.origin.grown_to = std::max(file.origin.original_size, offset + length);
    return file;
}

}  // namespace strata::posix
