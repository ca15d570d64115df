// SPDX-License-Identifier: MIT
// Small RAII wrappers over the POSIX calls regions are made of. Private to libstrata.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <utility>

#include "strata/error.hpp"
#include "strata/region.hpp"

namespace strata::posix {

/// The system page size, read once.
std::size_t page_size() noexcept;
inline std::size_t round_up_to_page(std::size_t n) noexcept {
    const std::size_t p = page_size();
    return (n + p - 1) / p * p;
}
inline std::size_t round_down_to_page(std::size_t n) noexcept {
    return n / page_size() * page_size();
}

/// An owned file descriptor, closed on destruction.
class UniqueFd {
public:
    UniqueFd() = default;
    explicit UniqueFd(int fd) noexcept : fd_(fd) {}
    UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
    UniqueFd& operator=(UniqueFd&& o) noexcept {
        if (this != &o) {
            reset();
            fd_ = std::exchange(o.fd_, -1);
        }
        return *this;
    }
    UniqueFd(const UniqueFd&) = delete;
    UniqueFd& operator=(const UniqueFd&) = delete;
    ~UniqueFd() { reset(); }

    [[nodiscard]] int get() const noexcept { return fd_; }
    [[nodiscard]] int release() noexcept { return std::exchange(fd_, -1); }
    void reset() noexcept;

private:
    int fd_ = -1;
};

/// The file open as `fd` opened again with O_DIRECT and `access`
/// (O_RDONLY or O_WRONLY), through /proc/self/fd: the same file whatever its
/// path became. An empty UniqueFd if the file system refuses O_DIRECT, and
/// the caller goes through the page cache instead.
UniqueFd reopen_direct(int fd, int access);

/// An owned range of address space, unmapped on destruction.
class UniqueMapping {
public:
    UniqueMapping() = default;
    UniqueMapping(void* base, std::size_t length) noexcept : base_(base), length_(length) {}
    UniqueMapping(UniqueMapping&& o) noexcept
        : base_(std::exchange(o.base_, nullptr)), length_(std::exchange(o.length_, 0)) {}
    UniqueMapping& operator=(UniqueMapping&& o) noexcept {
        if (this != &o) {
            reset();
            base_ = std::exchange(o.base_, nullptr);
            length_ = std::exchange(o.length_, 0);
        }
        return *this;
    }
    UniqueMapping(const UniqueMapping&) = delete;
    UniqueMapping& operator=(const UniqueMapping&) = delete;
    ~UniqueMapping() { reset(); }

    [[nodiscard]] std::byte* get() const noexcept { return static_cast<std::byte*>(base_); }
    [[nodiscard]] std::byte* release() noexcept {
        length_ = 0;
        return static_cast<std::byte*>(std::exchange(base_, nullptr));
    }
    void reset() noexcept;

private:
    void* base_ = nullptr;
    std::size_t length_ = 0;
};

/// A file or device opened for a storage region, with what is needed to
/// undo the opening if a later step fails.
struct FileOrigin {
    bool created = false;             ///< this call created the file
    std::uint64_t original_size = 0;  ///< size before this call grew it
    std::uint64_t grown_to = 0;       ///< size right after this call reserved its range

    /// Undoes what the opening did to the file open as `fd` at `path`:
    /// removes a file it created (if `path` still names that file), or
    /// shrinks back what it grew. Both only while the file still ends where
    /// this call left it: a file someone grew further is left alone.
    void roll_back(int fd, const std::filesystem::path& path) const noexcept;
};

struct StorageFile {
    UniqueFd fd;
    FileOrigin origin;
    bool is_block_device = false;
    std::uint64_t device_size = 0;  ///< for block devices

    /// Undoes a failed opening: whatever size a failed reservation left is
    /// taken as this call's doing.
    void roll_back(const std::filesystem::path& path) noexcept;
};

/// Opens (creating if absent, unless read_only) the file or device at
/// `options.path` without following a link, refuses an existing regular file
/// of another user unless options.allow_other_owner, and makes sure
/// [offset, offset+length) exists with space reserved. `op` names the
/// calling operation in error messages.
Result<StorageFile> open_storage(const char* op, const StorageOptions& options, std::uint64_t length);

}  // namespace strata::posix
