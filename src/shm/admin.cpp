// SPDX-License-Identifier: MIT
// Listing and removing segments whose users are all dead.
#include "strata/shm/admin.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shm/files.hpp"
#include "shm/layout.hpp"
#include "strata/shm/segment.hpp"

namespace strata {
namespace {

namespace fs = std::filesystem;

/// Users holding a byte of the lock file, counted through F_OFD_GETLK (the
/// read_only users, who share one byte, count as one).
unsigned users_alive(int lock_fd) {
    unsigned alive = 0;
    off_t start = 1;
    while (start <= shm_detail::kReaderByte) {
        struct flock fl {};
        fl.l_type = F_WRLCK;
        fl.l_whence = SEEK_SET;
        fl.l_start = start;
        fl.l_len = shm_detail::kReaderByte + 1 - start;
        if (::fcntl(lock_fd, F_OFD_GETLK, &fl) != 0 || fl.l_type == F_UNLCK) {
            break;
        }
        ++alive;
        start = fl.l_start + std::max<off_t>(fl.l_len, 1);
    }
    return alive;
}

std::string segment_name_of(const fs::path& p) {
    const std::string file = p.filename().string();
    if (!file.starts_with("strata.") || !file.ends_with(".seg") || file.size() <= 11) {
        return {};
    }
    return file.substr(7, file.size() - 11);
}

SegmentInfo inspect(const fs::path& seg_path, const std::string& name, int lock_fd) {
    SegmentInfo info;
    info.name = name;
    info.path = seg_path;
    info.users_alive = lock_fd >= 0 ? users_alive(lock_fd) : 0;
    const int fd = ::open(seg_path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st {};
    if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        if (fd >= 0) {
            ::close(fd);
        }
        info.complete = false;
        return info;
    }
    info.size = static_cast<std::uint64_t>(st.st_size);
    const auto now_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    info.age_seconds = static_cast<double>(now_ns - st.st_mtim.tv_sec * 1'000'000'000LL - st.st_mtim.tv_nsec) / 1e9;
    if (info.size >= shm_detail::kHeaderBytes) {
        void* p = ::mmap(nullptr, shm_detail::kHeaderBytes, PROT_READ, MAP_SHARED, fd, 0);
        if (p != MAP_FAILED) {
            const auto* h = static_cast<const shm_detail::SegmentHeader*>(p);
            info.complete = h->magic.load() == shm_detail::kSegmentMagic;
            if (info.complete) {
                info.age_seconds = static_cast<double>(now_ns - static_cast<long long>(h->created_unix_ns)) / 1e9;
                if (h->broken.load() != 0) {
                    info.broken_reason =
                        std::string(h->broken_reason, ::strnlen(h->broken_reason, sizeof h->broken_reason));
                }
            }
            ::munmap(p, shm_detail::kHeaderBytes);
        }
    } else {
        info.complete = false;
    }
    ::close(fd);
    return info;
}

fs::path resolve(const fs::path& dir) {
    return dir.empty() ? default_segment_dir() : dir;
}

/// Whether `path` is a regular file (not a link) this user may trust (files.hpp):
/// in a directory shared with other users, theirs are neither listed nor removed.
bool ours(const fs::path& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && shm_detail::trusted(st, true);
}

/// The default directory must be the user's private one; a missing one holds nothing.
Result<bool> check_default_dir(const fs::path& dir, std::string_view op) {
    if (dir != default_segment_dir() || std::getenv("STRATA_SHM_DIR") != nullptr) {
        return true;
    }
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0 && errno == ENOENT) {
        return false;
    }
    auto checked = shm_detail::private_dir(dir.parent_path(), false, op);
    if (!checked) {
        return std::unexpected(checked.error());
    }
    return true;
}

}  // namespace

Result<std::vector<SegmentInfo>> list_segments(const fs::path& dir_in) {
    const fs::path dir = resolve(dir_in);
    auto exists = check_default_dir(dir, "list_segments");
    if (!exists) {
        return std::unexpected(exists.error());
    }
    if (!*exists) {
        return std::vector<SegmentInfo>{};
    }
    std::error_code error;
    fs::directory_iterator it(dir, error);
    if (error) {
        return make_sys_error(error.value(), "list_segments: dir={}: cannot read the directory", dir.string());
    }
    std::vector<SegmentInfo> out;
    for (const auto& entry : it) {
        const std::string name = segment_name_of(entry.path());
        if (name.empty()) {
            continue;
        }
        const fs::path lock_path = dir / fmt::format("strata.{}.lock", name);
        if (!ours(entry.path()) || (fs::exists(fs::symlink_status(lock_path)) && !ours(lock_path))) {
            continue;
        }
        const int lock_fd = ::open(lock_path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        out.push_back(inspect(entry.path(), name, lock_fd));
        if (lock_fd >= 0) {
            ::close(lock_fd);
        }
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    return out;
}

namespace {

/// Takes every lock byte of the lock file `lock_fd` (at `lock_path`) at once:
/// true when nobody holds any and the file is still the one at that path.
bool unused_lock_file(int lock_fd, const fs::path& lock_path) {
    struct flock fl {};
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    fl.l_start = 0;
    fl.l_len = shm_detail::kIndexByte + 1;
    struct stat by_fd {};
    struct stat by_path {};
    return ::fcntl(lock_fd, F_OFD_SETLK, &fl) == 0 && ::fstat(lock_fd, &by_fd) == 0 &&
           ::stat(lock_path.c_str(), &by_path) == 0 && by_fd.st_ino == by_path.st_ino;
}

/// The lock files named `name_prefix`... without a segment file, that nobody
/// holds: left by a creator that died between the two files.
void collect_lock_files(const fs::path& dir, std::string_view name_prefix, std::vector<std::string>& removed) {
    std::error_code error;
    const std::string start = fmt::format("strata.{}", name_prefix);
    for (const auto& entry : fs::directory_iterator(dir, error)) {
        const std::string file = entry.path().filename().string();
        if (!file.starts_with(start) || !file.ends_with(".lock") || !ours(entry.path())) {
            continue;
        }
        const std::string name = file.substr(7, file.size() - 12);
        if (fs::exists(fs::symlink_status(dir / fmt::format("strata.{}.seg", name)))) {
            continue;
        }
        const int lock_fd = ::open(entry.path().c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
        if (lock_fd < 0) {
            continue;
        }
        if (unused_lock_file(lock_fd, entry.path()) &&
            !fs::exists(fs::symlink_status(dir / fmt::format("strata.{}.seg", name))) &&
            ::unlink(entry.path().c_str()) == 0) {
            removed.push_back(name);
        }
        ::close(lock_fd);
    }
}

}  // namespace

Result<std::vector<std::string>> collect_segments(const fs::path& dir_in, std::string_view name_prefix) {
    const fs::path dir = resolve(dir_in);
    auto listed = list_segments(dir);
    if (!listed) {
        return std::unexpected(listed.error());
    }
    std::vector<std::string> removed;
    for (const auto& info : *listed) {
        if (!info.name.starts_with(name_prefix)) {
            continue;
        }
        const fs::path lock_path = dir / fmt::format("strata.{}.lock", info.name);
        const int lock_fd = ::open(lock_path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
        if (lock_fd < 0) {
            // No lock file: nobody can be attached (attach holds it first).
            if (errno == ENOENT && ::unlink(info.path.c_str()) == 0) {
                removed.push_back(info.name);
            }
            continue;
        }
        // The guard byte and every user byte at once: only when nobody holds any.
        if (unused_lock_file(lock_fd, lock_path)) {
            ::unlink(info.path.c_str());
            ::unlink(lock_path.c_str());
            removed.push_back(info.name);
        }
        ::close(lock_fd);
    }
    if (!name_prefix.empty()) {
        collect_lock_files(dir, name_prefix, removed);
    }
    return removed;
}

}  // namespace strata
