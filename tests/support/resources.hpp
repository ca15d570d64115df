// SPDX-License-Identifier: MIT
// Test resources: unique names, temporary directories, shared-segment clean-up,
// byte patterns and file access that does not go through strata (the oracle).
//
// Names carry the pid, the test and a counter, so tests run in parallel
// (ctest -j, one process per test) never share a file or a segment.
#pragma once

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace strata::test {

inline std::size_t page_size() {
    return static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

/// The current test as "Suite.name", with characters unfit for a file name replaced.
inline std::string current_test_label() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string label =
        info == nullptr ? std::string("no-test") : std::string(info->test_suite_name()) + "." + info->name();
    std::replace_if(
        label.begin(), label.end(), [](char c) { return c == '/' || c == ' ' || c == '\\'; }, '_');
    return label;
}

/// "strata-test-<pid>-<counter>-<Suite.test>[-tag]", at most 150 characters, so
/// it fits a shared-segment name (200) and a file name (255).
inline std::string unique_name(std::string_view tag = {}) {
    static std::atomic<unsigned> counter{0};
    std::string name = fmt::format("strata-test-{}-{}-{}", ::getpid(), counter++, current_test_label());
    if (!tag.empty()) {
        name += fmt::format("-{}", tag);
    }
    if (name.size() > 150) {
        name.resize(150);
    }
    return name;
}

/// A fresh directory under the temporary directory, removed with its content.
class TempDir {
public:
    TempDir() {
        std::string pattern = (std::filesystem::temp_directory_path() / (unique_name() + "-XXXXXX")).string();
        if (::mkdtemp(pattern.data()) == nullptr) {
            ADD_FAILURE() << "mkdtemp " << pattern << " failed, errno " << errno;
            return;
        }
        path_ = std::filesystem::canonical(pattern);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    ~TempDir() {
        if (!path_.empty()) {
            std::error_code ignored;
            std::filesystem::remove_all(path_, ignored);
        }
    }

    [[nodiscard]] const std::filesystem::path& path() const { return path_; }
    [[nodiscard]] std::filesystem::path operator/(std::string_view name) const { return path_ / name; }

    /// Names of the entries in the directory, sorted.
    [[nodiscard]] std::vector<std::string> entries() const {
        std::vector<std::string> names;
        std::error_code error;
        for (const auto& entry : std::filesystem::directory_iterator(path_, error)) {
            names.push_back(entry.path().filename().string());
        }
        std::sort(names.begin(), names.end());
        return names;
    }

private:
    std::filesystem::path path_;
};

/// "/dev/shm/<name>": where the kernel keeps a POSIX shared-memory segment.
inline std::filesystem::path shm_path(std::string_view name) {
    return std::filesystem::path("/dev/shm") / name;
}

/// Unlinks a shared segment when the test ends, whatever happened.
class ShmCleanup {
public:
    explicit ShmCleanup(std::string name) : name_(std::move(name)) {}
    ShmCleanup(const ShmCleanup&) = delete;
    ShmCleanup& operator=(const ShmCleanup&) = delete;
    ~ShmCleanup() { ::shm_unlink(("/" + name_).c_str()); }

private:
    std::string name_;
};

/// A deterministic byte for position `index` of pattern `seed`. Patterns with
/// seeds that differ by less than 8 differ at every position.
inline std::byte pattern_byte(std::size_t index, unsigned seed) {
    return static_cast<std::byte>((index * 131U + (index >> 12U) * 7U + seed * 29U) & 0xFFU);
}

/// Fills `bytes` with pattern `seed`, starting at position `first` of the pattern.
inline void fill_pattern(std::span<std::byte> bytes, unsigned seed, std::size_t first = 0) {
    for (std::size_t i = 0; i < bytes.size(); ++i) {
        bytes[i] = pattern_byte(first + i, seed);
    }
}

inline std::vector<std::byte> make_pattern(std::size_t size, unsigned seed, std::size_t first = 0) {
    std::vector<std::byte> bytes(size);
    fill_pattern(bytes, seed, first);
    return bytes;
}

/// "" when `actual` holds pattern `seed` from position `first`, else where it differs.
inline std::string pattern_mismatch(std::span<const std::byte> actual, unsigned seed, std::size_t first = 0) {
    for (std::size_t i = 0; i < actual.size(); ++i) {
        if (actual[i] != pattern_byte(first + i, seed)) {
            return fmt::format("byte {} of {} is {:#04x}, pattern {} has {:#04x}", i, actual.size(),
                               std::to_integer<unsigned>(actual[i]), seed,
                               std::to_integer<unsigned>(pattern_byte(first + i, seed)));
        }
    }
    return {};
}

/// "" when both hold the same bytes, else the first difference.
inline std::string bytes_mismatch(std::span<const std::byte> actual, std::span<const std::byte> expected) {
    if (actual.size() != expected.size()) {
        return fmt::format("{} bytes, expected {}", actual.size(), expected.size());
    }
    const auto [a, e] = std::mismatch(actual.begin(), actual.end(), expected.begin());
    if (a == actual.end()) {
        return {};
    }
    return fmt::format("byte {} of {} is {:#04x}, expected {:#04x}", a - actual.begin(), actual.size(),
                       std::to_integer<unsigned>(*a), std::to_integer<unsigned>(*e));
}

/// "" when every byte is zero, else the first that is not.
inline std::string nonzero_byte(std::span<const std::byte> bytes) {
    const auto it = std::find_if(bytes.begin(), bytes.end(), [](std::byte b) { return b != std::byte{0}; });
    if (it == bytes.end()) {
        return {};
    }
    return fmt::format("byte {} of {} is {:#04x}", it - bytes.begin(), bytes.size(), std::to_integer<unsigned>(*it));
}

/// Reads [offset, offset+length) of a file or device with pread; shorter at end of file.
inline std::vector<std::byte> read_file(const std::filesystem::path& path, std::uint64_t offset, std::size_t length) {
    std::vector<std::byte> bytes(length);
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        ADD_FAILURE() << "open " << path << " failed, errno " << errno;
        return {};
    }
    std::size_t done = 0;
    while (done < length) {
        const ssize_t n = ::pread(fd, bytes.data() + done, length - done, static_cast<off_t>(offset + done));
        if (n <= 0) {
            break;
        }
        done += static_cast<std::size_t>(n);
    }
    ::close(fd);
    bytes.resize(done);
    return bytes;
}

/// Writes `bytes` at `offset` of a file, creating it (0600) if needed.
inline void write_file(const std::filesystem::path& path, std::uint64_t offset, std::span<const std::byte> bytes) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        ADD_FAILURE() << "open " << path << " failed, errno " << errno;
        return;
    }
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::pwrite(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
        if (n <= 0) {
            ADD_FAILURE() << "pwrite " << path << " failed, errno " << errno;
            break;
        }
        done += static_cast<std::size_t>(n);
    }
    ::close(fd);
}

/// stat() of a path; st_nlink == 0 when it does not exist.
inline struct stat stat_of(const std::filesystem::path& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
        st = {};
    }
    return st;
}

inline std::uint64_t file_size(const std::filesystem::path& path) {
    return static_cast<std::uint64_t>(stat_of(path).st_size);
}

/// Permission bits of a path (mode & 07777).
inline unsigned permissions_of(const std::filesystem::path& path) {
    return static_cast<unsigned>(stat_of(path).st_mode) & 07777U;
}

}  // namespace strata::test
