// SPDX-License-Identifier: MIT
// The FUSE side of strata-fsd: / holds db/, db/ holds the registered files.
//
// Every open checks the caller against the file's tasks (Registry::may_access);
// reads and writes then go through the open file. Inputs registered with the
// fast path are opened with keep_cache, so the kernel serves them from the
// pages store_in_page_cache() pushed; the others use direct I/O so each read
// is one request of up to max_pages (1 MiB) answered from the data channel.
// A task allowed temporaries may create, write, rename and remove files of its
// own under /db (Registry::create_temporary); everyone else is refused.
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "daemon.hpp"

namespace strata::external::fsd {

namespace {

constexpr double kForever = 86400.0;  // inputs never change; removal invalidates explicitly

struct Handle {
    std::shared_ptr<Entry> entry;
};

Daemon& daemon_of(fuse_req_t req) {
    return *static_cast<Daemon*>(fuse_req_userdata(req));
}

struct stat attributes(std::uint64_t ino, Entry* entry) {
    struct stat st {};
    st.st_ino = ino;
    st.st_uid = ::getuid();
    st.st_gid = ::getgid();
    if (entry == nullptr) {
        st.st_mode = S_IFDIR | 0500;
        st.st_nlink = 2;
        return st;
    }
    st.st_mode = S_IFREG | (entry->output ? 0600 : 0400);
    st.st_nlink = 1;
    st.st_size = static_cast<off_t>(entry->current_size());
    st.st_blocks = (st.st_size + 511) / 512;
    return st;
}

void reply_entry(fuse_req_t req, std::uint64_t ino, Entry* entry) {
    fuse_entry_param param{};
    param.ino = ino;
    param.generation = 1;
    param.attr = attributes(ino, entry);
    // A temporary's name means another file to another task: no caching of it.
    param.entry_timeout = entry != nullptr && entry->temporary ? 0.0 : kForever;
    param.attr_timeout = entry != nullptr && entry->output ? 0.0 : kForever;
    fuse_reply_entry(req, &param);
}

void on_init(void* /*userdata*/, fuse_conn_info* conn) {
    // Inputs never change while registered; a stale-attribute check would only
    // throw away the pages the fast path stored.
    conn->want &= ~static_cast<unsigned>(FUSE_CAP_AUTO_INVAL_DATA);
}

void on_lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
    if (parent == kRootIno) {
        if (std::strcmp(name, "db") == 0) {
            reply_entry(req, kDbIno, nullptr);
        } else {
            fuse_reply_err(req, ENOENT);
        }
        return;
    }
    auto& daemon = daemon_of(req);
    auto entry = parent == kDbIno ? daemon.registry.find(std::string(name)) : nullptr;
    if (entry == nullptr && parent == kDbIno) {
        if (const auto task = daemon.registry.temporaries_task_of(fuse_req_ctx(req)->pid); task != 0) {
            entry = daemon.registry.find_temporary(task, name);
        }
    }
    if (entry == nullptr) {
        fuse_reply_err(req, ENOENT);  // unregistered paths do not exist
        return;
    }
    if (!daemon.registry.may_access(*entry, fuse_req_ctx(req)->pid)) {
        fuse_reply_err(req, EACCES);
        return;
    }
    reply_entry(req, entry->ino, entry.get());
}

void on_getattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info* /*fi*/) {
    if (ino == kRootIno || ino == kDbIno) {
        const auto st = attributes(ino, nullptr);
        fuse_reply_attr(req, &st, kForever);
        return;
    }
    const auto entry = daemon_of(req).registry.find(ino);
    if (entry == nullptr) {
        fuse_reply_err(req, ENOENT);
        return;
    }
    const auto st = attributes(ino, entry.get());
    fuse_reply_attr(req, &st, entry->output ? 0.0 : kForever);
}

void on_setattr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set, fuse_file_info* /*fi*/) {
    auto& daemon = daemon_of(req);
    const auto entry = daemon.registry.find(ino);
    if (entry == nullptr) {
        fuse_reply_err(req, ino == kRootIno || ino == kDbIno ? EACCES : ENOENT);
        return;
    }
    if (!daemon.registry.may_access(*entry, fuse_req_ctx(req)->pid)) {
        fuse_reply_err(req, EACCES);
        return;
    }
    if ((to_set & FUSE_SET_ATTR_SIZE) != 0) {
        if (!entry->output) {
            fuse_reply_err(req, EACCES);  // inputs are read-only
            return;
        }
        const std::lock_guard lock(entry->size_mutex);
        if (::ftruncate(entry->memfd, attr->st_size) != 0) {
            fuse_reply_err(req, errno);
            return;
        }
        entry->size = static_cast<std::uint64_t>(attr->st_size);
    }
    // Modes and times are not kept: the file is the data block, nothing more.
    const auto st = attributes(ino, entry.get());
    fuse_reply_attr(req, &st, entry->output ? 0.0 : kForever);
}

void on_open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
    auto& daemon = daemon_of(req);
    const auto entry = daemon.registry.find(ino);
    if (entry == nullptr) {
        fuse_reply_err(req, ENOENT);
        return;
    }
    if (!daemon.registry.may_access(*entry, fuse_req_ctx(req)->pid)) {
        fuse_reply_err(req, EACCES);
        return;
    }
    if (!entry->output && (fi->flags & O_ACCMODE) != O_RDONLY) {
        fuse_reply_err(req, EACCES);
        return;
    }
    fi->keep_cache = entry->cache ? 1 : 0;
    fi->direct_io = entry->cache ? 0 : 1;
    auto* handle = new Handle{entry};
    fi->fh = reinterpret_cast<std::uint64_t>(handle);
    if (fuse_reply_open(req, fi) != 0) {
        delete handle;  // the caller was interrupted: no release will come
    }
}

void on_read(fuse_req_t req, fuse_ino_t /*ino*/, size_t size, off_t off, fuse_file_info* fi) {
    auto& entry = *reinterpret_cast<Handle*>(fi->fh)->entry;
    const std::uint64_t total = entry.current_size();
    const auto offset = static_cast<std::uint64_t>(off);
    const std::size_t length =
        offset >= total ? 0 : static_cast<std::size_t>(std::min<std::uint64_t>(size, total - offset));
    if (length == 0) {
        fuse_reply_buf(req, nullptr, 0);
        return;
    }
    if (entry.output) {
        thread_local std::vector<char> buffer;
        buffer.resize(std::max(buffer.size(), length));
        const ssize_t n = ::pread(entry.memfd, buffer.data(), length, off);
        if (n < 0) {
            fuse_reply_err(req, errno);
        } else {
            fuse_reply_buf(req, buffer.data(), static_cast<std::size_t>(n));
        }
        return;
    }
    const char* bytes = nullptr;
    if (const int err = entry.source->read(offset, length, bytes); err != 0) {
        // The owner's memory is gone (it died): the program sees an I/O error.
        fuse_reply_err(req, EIO);
        return;
    }
    fuse_reply_buf(req, bytes, length);
}

void on_write(fuse_req_t req, fuse_ino_t /*ino*/, const char* buf, size_t size, off_t off, fuse_file_info* fi) {
    auto& entry = *reinterpret_cast<Handle*>(fi->fh)->entry;
    if (!entry.output) {
        fuse_reply_err(req, EBADF);
        return;
    }
    std::size_t done = 0;
    while (done < size) {
        const ssize_t n = ::pwrite(entry.memfd, buf + done, size - done, off + static_cast<off_t>(done));
        if (n < 0) {
            fuse_reply_err(req, errno);
            return;
        }
        done += static_cast<std::size_t>(n);
    }
    {
        const std::lock_guard lock(entry.size_mutex);
        entry.size = std::max<std::uint64_t>(entry.size, static_cast<std::uint64_t>(off) + size);
    }
    fuse_reply_write(req, size);
}

void on_release(fuse_req_t req, fuse_ino_t /*ino*/, fuse_file_info* fi) {
    delete reinterpret_cast<Handle*>(fi->fh);
    fuse_reply_err(req, 0);
}

void on_fsync(fuse_req_t req, fuse_ino_t /*ino*/, int /*datasync*/, fuse_file_info* /*fi*/) {
    fuse_reply_err(req, 0);
}

void on_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* /*fi*/) {
    std::vector<std::pair<std::string, std::uint64_t>> names{{".", ino}, {"..", kRootIno}};
    if (ino == kRootIno) {
        names.emplace_back("db", kDbIno);
    } else if (ino == kDbIno) {
        for (auto& name : daemon_of(req).registry.visible_to(fuse_req_ctx(req)->pid)) {
            names.push_back(std::move(name));
        }
    } else {
        fuse_reply_err(req, ENOTDIR);
        return;
    }
    std::vector<char> buffer(size);
    std::size_t used = 0;
    for (std::size_t i = static_cast<std::size_t>(off); i < names.size(); ++i) {
        struct stat st {};
        st.st_ino = names[i].second;
        st.st_mode = names[i].second <= kDbIno ? S_IFDIR : S_IFREG;
        const std::size_t need = fuse_add_direntry(req, buffer.data() + used, size - used, names[i].first.c_str(), &st,
                                                   static_cast<off_t>(i + 1));
        if (need > size - used) {
            break;
        }
        used += need;
    }
    fuse_reply_buf(req, buffer.data(), used);
}

// Creating, removing or renaming is refused, except for a task's temporaries.
// The task of the caller, 0 when it may have none.
std::uint64_t temporaries_task(fuse_req_t req, fuse_ino_t parent) {
    return parent == kDbIno ? daemon_of(req).registry.temporaries_task_of(fuse_req_ctx(req)->pid) : 0;
}

void on_create(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, fuse_file_info* fi) {
    const std::uint64_t task = temporaries_task(req, parent);
    if (task == 0 || !S_ISREG(mode)) {
        fuse_reply_err(req, EACCES);
        return;
    }
    std::shared_ptr<Entry> entry;
    if (const int err = daemon_of(req).registry.create_temporary(task, name, entry); err != 0) {
        fuse_reply_err(req, err);
        return;
    }
    fuse_entry_param param{};
    param.ino = entry->ino;
    param.generation = 1;
    param.attr = attributes(entry->ino, entry.get());
    fi->direct_io = 1;
    auto* handle = new Handle{entry};
    fi->fh = reinterpret_cast<std::uint64_t>(handle);
    if (fuse_reply_create(req, &param, fi) != 0) {
        delete handle;  // the caller was interrupted: no release will come
        (void)daemon_of(req).registry.remove_temporary(task, name);
    }
}

void on_unlink(fuse_req_t req, fuse_ino_t parent, const char* name) {
    const std::uint64_t task = temporaries_task(req, parent);
    fuse_reply_err(req, task == 0 ? EACCES : daemon_of(req).registry.remove_temporary(task, name));
}

void on_rename(fuse_req_t req, fuse_ino_t parent, const char* name, fuse_ino_t newparent, const char* newname,
               unsigned int flags) {
    if ((flags & ~static_cast<unsigned>(RENAME_NOREPLACE)) != 0) {
        fuse_reply_err(req, EINVAL);  // RENAME_EXCHANGE and RENAME_WHITEOUT: not for data blocks
        return;
    }
    const std::uint64_t task = newparent == parent ? temporaries_task(req, parent) : 0;
    fuse_reply_err(req, task == 0 ? EACCES
                                  : daemon_of(req).registry.rename_temporary(task, name, newname,
                                                                             (flags & RENAME_NOREPLACE) != 0));
}

void refuse_mknod(fuse_req_t req, fuse_ino_t /*parent*/, const char* /*name*/, mode_t /*mode*/, dev_t /*rdev*/) {
    fuse_reply_err(req, EACCES);
}
void refuse_mkdir(fuse_req_t req, fuse_ino_t /*parent*/, const char* /*name*/, mode_t /*mode*/) {
    fuse_reply_err(req, EACCES);
}
void refuse_rmdir(fuse_req_t req, fuse_ino_t /*parent*/, const char* /*name*/) {
    fuse_reply_err(req, EACCES);
}

}  // namespace

fuse_lowlevel_ops make_operations() {
    fuse_lowlevel_ops ops{};
    ops.init = on_init;
    ops.lookup = on_lookup;
    ops.getattr = on_getattr;
    ops.setattr = on_setattr;
    ops.open = on_open;
    ops.read = on_read;
    ops.write = on_write;
    ops.release = on_release;
    // No flush: writes reach the daemon synchronously, and without a flush
    // handler the kernel stops sending one at every close (ENOSYS).
    ops.fsync = on_fsync;
    ops.readdir = on_readdir;
    ops.create = on_create;
    ops.mknod = refuse_mknod;
    ops.mkdir = refuse_mkdir;
    ops.unlink = on_unlink;
    ops.rmdir = refuse_rmdir;
    ops.rename = on_rename;
    return ops;
}

}  // namespace strata::external::fsd
