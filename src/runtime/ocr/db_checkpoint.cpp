// SPDX-License-Identifier: MIT
// ocrDbCheckpoint (include/ocr/extensions/ocr-db-checkpoint.h): a data block
// saved atomically to a file (temporary file, fdatasync, rename, directory
// sync) and restored from one.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <optional>
#include <string>

#include "core/file_owner.hpp"
#include "core/log.hpp"
#include "core/scope_guard.hpp"
#include "ocr/extensions/ocr-db-checkpoint.h"
#include "ocr/ocr.h"
#include "state.hpp"

namespace strata::ocr {

namespace {

namespace fs = std::filesystem;

// Reads or writes all `length` bytes at `offset`, retrying short transfers.
template <class Op>
Result<void> transfer(Op op, int fd, std::byte* data, std::size_t length, std::string_view what, const fs::path& path) {
    std::size_t done = 0;
    while (done < length) {
        const ssize_t n = op(fd, data + done, length - done, static_cast<off_t>(done));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            return make_sys_error(errno, "path={}: {} at byte {}", path.string(), what, done);
        }
        if (n == 0) {
            return make_error(Errc::io_error, "path={}: {} at byte {}: the file ended early", path.string(), what,
                              done);
        }
        done += static_cast<std::size_t>(n);
    }
    return {};
}

// Where the block's file part begins: blocks on storage (0) and combined
// blocks (after their memory part) keep [begin, size) in their region's
// file, from its offset 0; nullopt for blocks wholly in memory.
std::optional<std::uint64_t> file_part_begin(const Db& db) {
    if (!db.region || db.region->storage_bytes() == 0) {
        return std::nullopt;
    }
    const std::uint64_t begin = db.region->memory_bytes();
    auto tier = db.region->placement(db.region->data() + begin);
    if (begin >= db.size || !tier || *tier != Tier::storage) {
        return std::nullopt;
    }
    return begin;
}

// The file part of the block copied from its region's file to `to` at the
// same offset, inside the kernel (through the page cache the shared mapping
// writes): false when the kernel cannot (another file system type, an old
// kernel), and the caller writes those bytes from the mapping instead.
bool copy_in_kernel(const Db& db, std::uint64_t begin, int to, const fs::path& path) {
    const int from = ::open(db.region->path().c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (from < 0) {
        return false;
    }
    const ScopeGuard close_from([&] { ::close(from); });
    loff_t in = 0;
    auto out = static_cast<loff_t>(begin);
    while (static_cast<std::uint64_t>(out) < db.size) {
        const ssize_t n = ::copy_file_range(from, &in, to, &out,
                                            static_cast<std::size_t>(db.size - static_cast<std::uint64_t>(out)), 0);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            strata::detail::log().debug("ocrDbCheckpoint: path={}: copy_file_range stopped at {}: writing instead",
                                        path.string(), out);
            return false;
        }
    }
    return true;
}

// The block's bytes into `fd`: the file part in the kernel where it can, the rest from memory.
Result<void> write_block(const Db& db, int fd, const fs::path& tmp) {
    auto* data = static_cast<std::byte*>(db.data);
    const auto size = static_cast<std::size_t>(db.size);
    const auto begin = file_part_begin(db);
    if (begin && copy_in_kernel(db, *begin, fd, tmp)) {
        return transfer(::pwrite, fd, data, static_cast<std::size_t>(*begin), "writing the block's memory part", tmp);
    }
    return transfer(::pwrite, fd, data, size, "writing the block", tmp);
}

// Removes temporary files of SAVEs to `path` by processes that are gone.
void remove_stale_temporaries(const fs::path& path) {
    const fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
    const std::string prefix = path.filename().string() + ".tmp-";
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        const std::string name = entry.path().filename().string();
        if (!name.starts_with(prefix)) {
            continue;
        }
        const std::string pid_text = name.substr(prefix.size());
        if (pid_text.empty() || pid_text.find_first_not_of("0123456789") != std::string::npos) {
            continue;
        }
        struct stat st {};
        const pid_t pid = static_cast<pid_t>(std::stol(pid_text));
        if (::lstat(entry.path().c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() &&
            ::kill(pid, 0) != 0 && errno == ESRCH) {
            ::unlink(entry.path().c_str());
        }
    }
}

Result<void> sync_directory(const fs::path& path) {
    const fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        return make_sys_error(errno, "path={}: opening its directory to sync the rename", path.string());
    }
    const int rc = ::fsync(fd);
    const int err = errno;
    ::close(fd);
    if (rc != 0) {
        return make_sys_error(err, "path={}: syncing its directory after the rename", path.string());
    }
    return {};
}

Result<void> save_checkpoint(const Db& db, const fs::path& path) {
    remove_stale_temporaries(path);
    const fs::path tmp = fs::path(path.string() + ".tmp-" + std::to_string(::getpid()));
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        return make_sys_error(errno, "path={}: creating the temporary file {}", path.string(), tmp.string());
    }
    ScopeGuard remove_tmp([&] { ::unlink(tmp.c_str()); });
    {
        const ScopeGuard close_fd([&] { ::close(fd); });
        if (auto written = write_block(db, fd, tmp); !written) {
            return std::unexpected(written.error());
        }
        if (::fdatasync(fd) != 0) {
            return make_sys_error(errno, "path={}: fdatasync of {}", path.string(), tmp.string());
        }
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        return make_sys_error(errno, "path={}: renaming {} over it", path.string(), tmp.string());
    }
    remove_tmp.dismiss();
    return sync_directory(path);
}

Result<void> restore_checkpoint(const Db& db, const fs::path& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ELOOP) {
        return make_error(Errc::permission_denied, "path={}: a symbolic link: refused, restore from the file itself",
                          path.string());
    }
    if (fd < 0) {
        return make_sys_error(errno, "path={}: opening the checkpoint", path.string());
    }
    const ScopeGuard close_fd([&] { ::close(fd); });
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        return make_sys_error(errno, "path={}: fstat", path.string());
    }
    if (!S_ISREG(st.st_mode)) {
        return make_error(Errc::invalid_argument, "path={}: not a regular file", path.string());
    }
    if (st.st_uid != ::geteuid()) {
        return make_error(Errc::permission_denied,
                          "path={}: {}, not by this user: a checkpoint is restored only "
                          "from one's own file",
                          path.string(), strata::detail::describe_owner(st));
    }
    if (static_cast<std::uint64_t>(st.st_size) != db.size) {
        return make_error(Errc::invalid_argument, "path={}: holds {} bytes, the data block {}", path.string(),
                          st.st_size, db.size);
    }
    return transfer(::pread, fd, static_cast<std::byte*>(db.data), static_cast<std::size_t>(db.size),
                    "reading the checkpoint", path);
}

}  // namespace

}  // namespace strata::ocr

using namespace strata::ocr;

namespace {

// The hold of the running EDT on `db`: its mode, or nullopt when it holds none.
// Outside EDTs (legacy code) every block may be read and written.
std::optional<ocrDbAccessMode_t> hold_on(const std::shared_ptr<Db>& db) {
    Edt* edt = current_edt();
    if (edt == nullptr) {
        return DB_MODE_RW;
    }
    std::optional<ocrDbAccessMode_t> mode;
    for (const Hold& hold : edt->holds) {
        if (hold.db == db && !hold.released && (!mode || hold.mode == DB_MODE_RW || hold.mode == DB_MODE_EW)) {
            mode = hold.mode;
        }
    }
    return mode;
}

u8 ocr_code(strata::Errc code) {
    switch (code) {
        case strata::Errc::invalid_argument:
        case strata::Errc::not_found: return OCR_EINVAL;
        case strata::Errc::permission_denied: return OCR_EACCES;
        case strata::Errc::no_space: return OCR_ENOSPC;
        default: return OCR_EIO;
    }
}

}  // namespace

extern "C" {

u8 ocrDbCheckpoint(ocrGuid_t guid, const char* path, ocrDbCheckpointOp_t op) {
    OcrState* s = state();
    auto db = s != nullptr ? s->table.find_as<Db>(guid, Kind::db) : nullptr;
    const char* name = op == OCR_DB_CHECKPOINT_SAVE ? "save" : op == OCR_DB_CHECKPOINT_RESTORE ? "restore" : "?";
    auto fail = [&](u8 code, const std::string& why) {
        strata::detail::log().warn("strata-ocr: ocrDbCheckpoint(db={}, path={}, {}): {}", show(guid),
                                   path != nullptr ? path : "NULL", name, why);
        return code;
    };
    if (!db) {
        return fail(OCR_EINVAL, "not a live data block");
    }
    if (path == nullptr || *path == '\0') {
        return fail(OCR_EINVAL, "path is empty: name the checkpoint file");
    }
    if (op != OCR_DB_CHECKPOINT_SAVE && op != OCR_DB_CHECKPOINT_RESTORE) {
        return fail(OCR_EINVAL,
                    fmt::format("op={}: neither OCR_DB_CHECKPOINT_SAVE (0) nor _RESTORE (1)", static_cast<int>(op)));
    }
    const auto mode = hold_on(db);
    if (!mode) {
        return fail(OCR_EACCES, fmt::format("EDT {} does not hold the block", show(current_edt()->guid)));
    }
    if (op == OCR_DB_CHECKPOINT_RESTORE && *mode != DB_MODE_RW && *mode != DB_MODE_EW) {
        return fail(OCR_EACCES, "restoring writes the block: the EDT must hold it RW or EW");
    }
    auto done = op == OCR_DB_CHECKPOINT_SAVE ? save_checkpoint(*db, path) : restore_checkpoint(*db, path);
    if (!done) {
        return fail(ocr_code(done.error().code), done.error().what());
    }
    return 0;
}

}  // extern "C"
