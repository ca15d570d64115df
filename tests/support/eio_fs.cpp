// SPDX-License-Identifier: MIT
// A FUSE file system for tests that need a real I/O error from the kernel:
// one flat directory of regular files kept in memory, whose reads fail with
// EIO once they reach STRATA_TEST_EIO_AFTER bytes into a file (unset: never).
// The caller sees the kernel's FUSE client return the daemon's error, as it
// would a failing disk's, through read(), pread() with O_DIRECT, or a fault.
// With STRATA_TEST_HOLD_WHILE=PATH, every read waits while PATH exists: a
// device that answers only when the test says so, to show an order of events
// (a call returned before its file was read) without a bound in time.
//
//   strata_test_eio_fs MOUNTPOINT     (foreground; unmount to stop)
#define FUSE_USE_VERSION 31

#include <fcntl.h>
#include <fuse.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

struct File {
    std::vector<char> data;
    mode_t mode = 0600;
};

std::mutex files_mutex;             // held by every operation: the daemon is multi-threaded
std::map<std::string, File> files;  // by path ("/name")
off_t eio_after = -1;
const char* hold_while = nullptr;  // reads wait while this path exists

// A held read waits without the lock, so that the other operations go on.
void wait_for_release() {
    while (hold_while != nullptr && ::access(hold_while, F_OK) == 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
}

File* find(const char* path) {
    const auto it = files.find(path);
    return it == files.end() ? nullptr : &it->second;
}

int eio_getattr(const char* path, struct stat* st, fuse_file_info* /*fi*/) {
    const std::lock_guard lock(files_mutex);
    std::memset(st, 0, sizeof(*st));
    st->st_uid = ::getuid();
    st->st_gid = ::getgid();
    st->st_blksize = 4096;
    if (std::strcmp(path, "/") == 0) {
        st->st_mode = S_IFDIR | 0700;
        st->st_nlink = 2;
        return 0;
    }
    const File* file = find(path);
    if (file == nullptr) return -ENOENT;
    st->st_mode = S_IFREG | file->mode;
    st->st_nlink = 1;
    st->st_size = static_cast<off_t>(file->data.size());
    st->st_blocks = (st->st_size + 511) / 512;
    return 0;
}

int eio_readdir(const char* path, void* buf, fuse_fill_dir_t fill, off_t /*offset*/, fuse_file_info* /*fi*/,
                fuse_readdir_flags /*flags*/) {
    const std::lock_guard lock(files_mutex);
    if (std::strcmp(path, "/") != 0) return -ENOTDIR;
    fill(buf, ".", nullptr, 0, FUSE_FILL_DIR_PLUS);
    fill(buf, "..", nullptr, 0, FUSE_FILL_DIR_PLUS);
    for (const auto& [name, file] : files) fill(buf, name.c_str() + 1, nullptr, 0, FUSE_FILL_DIR_PLUS);
    return 0;
}

int eio_create(const char* path, mode_t mode, fuse_file_info* /*fi*/) {
    const std::lock_guard lock(files_mutex);
    File& file = files[path];
    file.mode = mode & 07777;
    return 0;
}

int eio_open(const char* path, fuse_file_info* fi) {
    const std::lock_guard lock(files_mutex);
    File* file = find(path);
    if (file == nullptr) return -ENOENT;
    if ((fi->flags & O_TRUNC) != 0) file->data.clear();
    return 0;
}

int eio_read(const char* path, char* buf, size_t size, off_t offset, fuse_file_info* /*fi*/) {
    wait_for_release();
    const std::lock_guard lock(files_mutex);
    const File* file = find(path);
    if (file == nullptr) return -ENOENT;
    if (eio_after >= 0 && offset + static_cast<off_t>(size) > eio_after) return -EIO;
    const auto length = static_cast<off_t>(file->data.size());
    if (offset >= length) return 0;
    const auto count = static_cast<size_t>(std::min<off_t>(static_cast<off_t>(size), length - offset));
    std::memcpy(buf, file->data.data() + offset, count);
    return static_cast<int>(count);
}

int eio_write(const char* path, const char* buf, size_t size, off_t offset, fuse_file_info* /*fi*/) {
    const std::lock_guard lock(files_mutex);
    File* file = find(path);
    if (file == nullptr) return -ENOENT;
    const auto end = static_cast<size_t>(offset) + size;
    if (file->data.size() < end) file->data.resize(end);
    std::memcpy(file->data.data() + offset, buf, size);
    return static_cast<int>(size);
}

int eio_truncate(const char* path, off_t size, fuse_file_info* /*fi*/) {
    const std::lock_guard lock(files_mutex);
    File* file = find(path);
    if (file == nullptr) return -ENOENT;
    file->data.resize(static_cast<size_t>(size));
    return 0;
}

int eio_fallocate(const char* path, int mode, off_t offset, off_t length, fuse_file_info* /*fi*/) {
    const std::lock_guard lock(files_mutex);
    if (mode != 0) return -EOPNOTSUPP;
    File* file = find(path);
    if (file == nullptr) return -ENOENT;
    const auto end = static_cast<size_t>(offset + length);
    if (file->data.size() < end) file->data.resize(end);
    return 0;
}

int eio_unlink(const char* path) {
    const std::lock_guard lock(files_mutex);
    return files.erase(path) == 1 ? 0 : -ENOENT;
}

int eio_chmod(const char* path, mode_t mode, fuse_file_info* /*fi*/) {
    const std::lock_guard lock(files_mutex);
    File* file = find(path);
    if (file == nullptr) return -ENOENT;
    file->mode = mode & 07777;
    return 0;
}

int eio_ok(const char* /*path*/, fuse_file_info* /*fi*/) {
    return 0;
}

int eio_fsync(const char* /*path*/, int /*datasync*/, fuse_file_info* /*fi*/) {
    return 0;
}

int eio_utimens(const char* /*path*/, const timespec /*tv*/[2], fuse_file_info* /*fi*/) {
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s MOUNTPOINT (STRATA_TEST_EIO_AFTER=bytes: reads from there fail)\n", argv[0]);
        return 2;
    }
    if (const char* after = std::getenv("STRATA_TEST_EIO_AFTER"); after != nullptr) {
        eio_after = static_cast<off_t>(std::strtoll(after, nullptr, 10));
    }
    hold_while = std::getenv("STRATA_TEST_HOLD_WHILE");
    fuse_operations ops{};
    ops.getattr = eio_getattr;
    ops.readdir = eio_readdir;
    ops.create = eio_create;
    ops.open = eio_open;
    ops.read = eio_read;
    ops.write = eio_write;
    ops.truncate = eio_truncate;
    ops.fallocate = eio_fallocate;
    ops.unlink = eio_unlink;
    ops.chmod = eio_chmod;
    ops.flush = eio_ok;
    ops.release = eio_ok;
    ops.fsync = eio_fsync;
    ops.utimens = eio_utimens;
    char foreground[] = "-f";
    char options[] = "-oattr_timeout=0,entry_timeout=0";
    char* args[] = {argv[0], foreground, options, argv[1], nullptr};
    return fuse_main(4, args, &ops, nullptr);
}
