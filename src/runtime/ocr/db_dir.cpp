// SPDX-License-Identifier: MIT
// Private directories of storage data blocks, and collecting those of dead runs (db_dir.hpp).
#include "db_dir.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/log.hpp"
#include "core/scope_guard.hpp"
#include "strata/runtime/ocr.hpp"

namespace strata::ocr {

namespace {

constexpr std::string_view kPrefix = "strata-ocr-";

// "strata-ocr-<pid>-XXXXXX" -> pid; 0 for any other name.
pid_t pid_of(std::string_view name) {
    if (!name.starts_with(kPrefix)) {
        return 0;
    }
    name.remove_prefix(kPrefix.size());
    const auto dash = name.find('-');
    if (dash == 0 || dash == std::string_view::npos || name.size() - dash - 1 != 6) {
        return 0;
    }
    long long pid = 0;
    for (char c : name.substr(0, dash)) {
        if (c < '0' || c > '9' || pid > 4'194'304) {
            return 0;
        }
        pid = pid * 10 + (c - '0');
    }
    return static_cast<pid_t>(pid);
}

bool process_alive(pid_t pid) {
    return ::kill(pid, 0) == 0 || errno == EPERM;
}

// Removes what `dir_fd` holds (files and links, never followed) and then the
// directory `name` of `base_fd`.
Result<void> remove_dir(int base_fd, int dir_fd, const std::filesystem::path& path) {
    const int list_fd = ::dup(dir_fd);
    if (list_fd < 0) {
        return make_sys_error(errno, "collect_db_dirs: dir={}: dup", path.string());
    }
    DIR* listing = ::fdopendir(list_fd);
    if (listing == nullptr) {
        const int err = errno;
        ::close(list_fd);
        return make_sys_error(err, "collect_db_dirs: dir={}: cannot list", path.string());
    }
    ScopeGuard close_listing([&] { ::closedir(listing); });
    ::rewinddir(listing);
    while (const dirent* entry = ::readdir(listing)) {
        const std::string_view name = entry->d_name;
        if (name == "." || name == "..") {
            continue;
        }
        if (::unlinkat(dir_fd, entry->d_name, 0) != 0 && errno != ENOENT) {
            return make_sys_error(errno, "collect_db_dirs: dir={}: cannot remove {}", path.string(), name);
        }
    }
    if (::unlinkat(base_fd, path.filename().c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
        return make_sys_error(errno, "collect_db_dirs: dir={}: cannot remove the directory", path.string());
    }
    return {};
}

}  // namespace

std::filesystem::path default_db_dir() {
    const char* dir = std::getenv("STRATA_OCR_DB_DIR");
    return dir != nullptr && *dir != '\0' ? std::filesystem::path(dir) : std::filesystem::path("/var/tmp");
}

Result<std::vector<std::filesystem::path>> collect_db_dirs(const std::filesystem::path& base) {
    std::vector<std::filesystem::path> removed;
    const int base_fd = ::open(base.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (base_fd < 0) {
        if (errno == ENOENT) {
            return removed;
        }
        return make_sys_error(errno, "collect_db_dirs: dir={}: cannot open", base.string());
    }
    ScopeGuard close_base([&] { ::close(base_fd); });
    const int list_fd = ::dup(base_fd);
    DIR* listing = list_fd >= 0 ? ::fdopendir(list_fd) : nullptr;
    if (listing == nullptr) {
        const int err = errno;
        if (list_fd >= 0) {
            ::close(list_fd);
        }
        return make_sys_error(err, "collect_db_dirs: dir={}: cannot list", base.string());
    }
    std::vector<std::string> candidates;
    while (const dirent* entry = ::readdir(listing)) {
        if (pid_of(entry->d_name) > 0) {
            candidates.emplace_back(entry->d_name);
        }
    }
    ::closedir(listing);
    for (const auto& name : candidates) {
        const auto path = base / name;
        // Never followed, never another user's: only the caller's own
        // directories are looked into and removed.
        const int fd = ::openat(base_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
            continue;
        }
        ScopeGuard close_dir([&] { ::close(fd); });
        struct stat st {};
        if (::fstat(fd, &st) != 0 || st.st_uid != ::geteuid()) {
            continue;
        }
        // The lock says the run is alive; the pid covers the moment between
        // its mkdtemp and its flock.
        if (::flock(fd, LOCK_EX | LOCK_NB) != 0 || process_alive(pid_of(name))) {
            continue;
        }
        if (auto done = remove_dir(base_fd, fd, path); !done) {
            return std::unexpected(done.error());
        }
        removed.push_back(path);
    }
    return removed;
}

Result<RunDbDir> RunDbDir::make(const std::filesystem::path& base) {
    if (auto collected = collect_db_dirs(base); !collected) {
        detail::log().warn("strata-ocr: {}", collected.error().what());
    } else {
        for (const auto& dir : *collected) {
            detail::log().info("strata-ocr: removed {}, the data block directory of a run that died", dir.string());
        }
    }
    // A collector of this user (another rank's make, `strata shm gc`) may hold
    // the new directory's lock for a moment while it checks the pid: the lock is
    // waited for. One whose pid it could not see (another pid namespace) may
    // even have removed the directory: then another one is made.
    for (int attempt = 0;; ++attempt) {
        std::string pattern = (base / fmt::format("{}{}-XXXXXX", kPrefix, ::getpid())).string();
        if (::mkdtemp(pattern.data()) == nullptr) {
            return make_sys_error(errno, "storage data blocks: db_dir={}: cannot make the run's private directory",
                                  base.string());
        }
        const int fd = ::open(pattern.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st {};
        int err = 0;
        if (fd < 0 || ::flock(fd, LOCK_EX) != 0 || ::fstat(fd, &st) != 0) {
            err = errno;
        } else if (st.st_nlink == 0) {
            err = ENOENT;
        } else {
            return RunDbDir(pattern, fd);
        }
        if (fd >= 0) {
            ::close(fd);
        }
        ::rmdir(pattern.c_str());
        if (err != ENOENT || attempt == 2) {
            return make_sys_error(err, "storage data blocks: dir={}: cannot open and lock the run's private directory",
                                  pattern);
        }
    }
}

RunDbDir::RunDbDir(RunDbDir&& other) noexcept : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)) {}

RunDbDir::~RunDbDir() {
    if (fd_ < 0) {
        return;
    }
    const auto base = path_.has_parent_path() ? path_.parent_path() : std::filesystem::path(".");
    const int base_fd = ::open(base.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (base_fd >= 0) {
        if (auto done = remove_dir(base_fd, fd_, path_); !done) {
            detail::log().warn("strata-ocr: {}", done.error().what());
        }
        ::close(base_fd);
    }
    ::close(fd_);
}

}  // namespace strata::ocr
