// SPDX-License-Identifier: MIT
// Attaching to and detaching from a segment: the lock-file protocol.
//
// Byte 0 of the lock file (the guard) serialises creation, opening and
// removal; each user holds its own byte from attach to detach. A user that
// holds the guard and dies releases it with its descriptors, so no step here
// can wedge the others. A detaching user that finds no other byte held is the
// last one and removes both files (while holding the guard, so nobody can be
// attaching at that moment).
#include <chrono>
#include <cstring>
#include <random>
#include <thread>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.hpp"
#include "core/scope_guard.hpp"
#include "shm/files.hpp"
#include "shm/layout.hpp"
#include "strata/shm/segment.hpp"

namespace strata::shm_detail {
namespace {

namespace fs = std::filesystem;

bool ofd_lock(int fd, short type, off_t start, off_t length) {
    struct flock fl {};
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    fl.l_start = start;
    fl.l_len = length;
    return ::fcntl(fd, F_OFD_SETLK, &fl) == 0;
}

/// Takes byte `start` (`type`: F_WRLCK or F_RDLCK), retrying for up to 5 s
/// (a live holder holds it briefly).
bool take_byte(int fd, short type, off_t start) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!ofd_lock(fd, type, start, 1)) {
        if (errno != EAGAIN && errno != EACCES && errno != EINTR) {
            return false;
        }
        if (std::chrono::steady_clock::now() > deadline) {
            errno = ETIMEDOUT;
            return false;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    return true;
}

/// The guard: exclusive to create, open for writing or remove; shared to open read_only.
bool take_guard(int fd, short type) {
    return take_byte(fd, type, 0);
}

void drop_guard(int fd) {
    ofd_lock(fd, F_UNLCK, 0, 1);
}

bool same_file(int fd, const fs::path& path) {
    struct stat by_fd {};
    struct stat by_path {};
    return ::fstat(fd, &by_fd) == 0 && ::lstat(path.c_str(), &by_path) == 0 && by_fd.st_ino == by_path.st_ino &&
           by_fd.st_dev == by_path.st_dev;
}

std::uint64_t random_id() {
    std::uint64_t id = 0;
    while (id == 0) {
        if (::getrandom(&id, sizeof id, 0) != sizeof id) {
            std::random_device device;
            id = (static_cast<std::uint64_t>(device()) << 32U) ^ static_cast<std::uint64_t>(device()) ^
                 static_cast<std::uint64_t>(::getpid());
        }
    }
    return id;
}

std::uint64_t unix_ns() {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count());
}

void copy_name(char* out, std::size_t capacity, std::string_view text) {
    const std::size_t n = std::min(capacity - 1, text.size());
    std::memcpy(out, text.data(), n);
    out[n] = '\0';
}

std::string process_name() {
    char comm[32] = {};
    if (const int fd = ::open("/proc/self/comm", O_RDONLY | O_CLOEXEC); fd >= 0) {
        const ssize_t n = ::read(fd, comm, sizeof comm - 1);
        ::close(fd);
        if (n > 0) {
            comm[n - 1] = comm[n - 1] == '\n' ? '\0' : comm[n - 1];
        }
    }
    return comm;
}

Result<void> map_segment(Attachment& a, std::size_t size, bool read_only) {
    // read_only: the file is open O_RDONLY and nothing of it is writable here;
    // such a user takes no lock inside the segment (see IndexLock).
    void* p = ::mmap(nullptr, size, read_only ? PROT_READ : PROT_READ | PROT_WRITE, MAP_SHARED, a.seg_fd, 0);
    if (p == MAP_FAILED) {
        return make_sys_error(errno, "Segment::open: segment '{}': cannot map {} bytes of {}", a.name, size,
                              a.seg_path.string());
    }
    a.base = static_cast<std::byte*>(p);
    a.size = size;
    a.header = reinterpret_cast<SegmentHeader*>(a.base);
    a.manager = reinterpret_cast<SegmentManager*>(a.base + kHeaderBytes);
    return {};
}

/// Creates and formats the segment file; `created` tells the caller to unlink it on failure.
Result<void> create_segment(Attachment& a, std::size_t size, mode_t permissions, bool& created) {
    a.seg_fd = ::open(a.seg_path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, permissions);
    if (a.seg_fd < 0) {
        return make_sys_error(errno, "Segment::open: segment '{}': cannot create {}", a.name, a.seg_path.string());
    }
    created = true;
    ::fchmod(a.seg_fd, permissions);
    if (const int err = ::posix_fallocate(a.seg_fd, 0, static_cast<off_t>(size)); err != 0) {
        return make_sys_error(err, "Segment::open: segment '{}': size={}: cannot reserve the segment's pages in {}",
                              a.name, size, a.dir.string());
    }
    if (auto mapped = map_segment(a, size, false); !mapped) {
        return mapped;
    }
    auto* header = ::new (a.base) SegmentHeader();
    header->segment_id = random_id();
    header->size = size;
    header->created_unix_ns = unix_ns();
    copy_name(header->name, sizeof header->name, a.name);
    register_attachment(&a);  // the manager's constructor takes its own locks
    try {
        ::new (a.manager) SegmentManager(size - kHeaderBytes);
    } catch (const std::exception& e) {
        unregister_attachment(&a);
        return make_error(Errc::internal, "Segment::open: segment '{}': cannot set up the allocator: {}", a.name,
                          e.what());
    }
    try {
        // Keeps objects off the page of the manager's locks, which read_only users map writable.
        (void)a.manager->allocate(static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)));
    } catch (const std::exception&) {  // NOLINT(bugprone-empty-catch)
        // A segment too small to spare the page: its objects may share the page of the locks.
    }
    unregister_attachment(&a);
    header->magic.store(kSegmentMagic, std::memory_order_release);
    return {};
}

enum class Opened { ok, incomplete };

Result<Opened> open_segment(Attachment& a, bool read_only) {
    struct stat st {};
    if (::fstat(a.seg_fd, &st) != 0) {
        return make_sys_error(errno, "Segment::open: segment '{}': cannot stat {}", a.name, a.seg_path.string());
    }
    const auto size = static_cast<std::size_t>(st.st_size);
    if (size < kMinSegmentBytes) {
        return Opened::incomplete;
    }
    if (auto mapped = map_segment(a, size, read_only); !mapped) {
        return std::unexpected(mapped.error());
    }
    if (a.header->magic.load(std::memory_order_acquire) != kSegmentMagic) {
        return Opened::incomplete;
    }
    if (a.header->version != kLayoutVersion || a.header->size != size) {
        return make_error(Errc::invalid_argument,
                          "Segment::open: segment '{}': {} has layout version {} and size {}, this strata expects "
                          "version {} and the file's size {}",
                          a.name, a.seg_path.string(), a.header->version, a.header->size, kLayoutVersion, size);
    }
    return Opened::ok;
}

Result<void> claim_user_slot(Attachment& a) {
    if (a.read_only) {
        // Readers share one byte: they hold no token and take no lock inside the segment.
        if (!ofd_lock(a.lock_fd, F_RDLCK, kReaderByte, 1)) {
            return make_sys_error(errno, "Segment::open: segment '{}': cannot hold the readers' byte of {}", a.name,
                                  a.lock_path.string());
        }
        return {};
    }
    for (unsigned i = 1; i <= kMaxUsers; ++i) {
        if (ofd_lock(a.lock_fd, F_WRLCK, static_cast<off_t>(i), 1)) {
            UserEntry& u = a.header->users[i];
            const std::uint64_t previous = u.generation.load();
            if (previous != 0) {
                u.previous_generation = previous;
                u.previous_pid = u.pid;
                std::memcpy(u.previous_comm, u.comm, sizeof u.comm);
            }
            const std::uint64_t generation = previous + 1;
            u.generation.store(generation, std::memory_order_release);
            u.pid = ::getpid();
            u.attached_unix_ns = unix_ns();
            copy_name(u.comm, sizeof u.comm, process_name());
            a.slot = i;
            a.token = (generation << 16U) | i;
            return {};
        }
    }
    return make_error(Errc::resource_exhausted,
                      "Segment::open: segment '{}' already has {} users attached, the limit of a segment (kMaxUsers)",
                      a.name, kMaxUsers);
}

enum class Step { done, retry };

/// Opens the lock file: created (O_EXCL) when the mode may create, else an
/// existing one the caller trusts. Sets a.lock_fd; `created` when this call made it.
Result<void> open_lock_file(Attachment& a, bool may_create, mode_t permissions, bool& created) {
    if (may_create) {
        a.lock_fd = ::open(a.lock_path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, permissions);
        if (a.lock_fd >= 0) {
            created = true;
            ::fchmod(a.lock_fd, permissions);
            return {};
        }
        if (errno != EEXIST) {
            return make_sys_error(errno, "Segment::open: segment '{}': cannot create the lock file {}", a.name,
                                  a.lock_path.string());
        }
    }
    auto fd = open_trusted(a.lock_path, a.read_only ? O_RDONLY : O_RDWR, a.group_access, "Segment::open",
                           fmt::format("segment '{}': lock file", a.name));
    if (!fd) {
        return std::unexpected(fd.error());
    }
    a.lock_fd = *fd;
    return {};
}

bool may_create(SegmentMode mode) {
    return mode == SegmentMode::create_only || mode == SegmentMode::open_or_create || mode == SegmentMode::recreate;
}

std::unexpected<Error> missing_segment(const Attachment& a, SegmentMode mode) {
    return make_error(Errc::not_found, "Segment::open: mode={}: segment '{}' does not exist in {}", to_string(mode),
                      a.name, a.dir.string());
}

/// With the guard held: opens the existing segment file, or creates it when
/// the mode may. `retry` when the files must be made anew (recreate, or an
/// incomplete segment under open_or_create); `created` when this call made it.
Result<Step> open_or_create_segment(Attachment& a, SegmentMode& mode, bool exists, std::size_t size, mode_t permissions,
                                    bool& created) {
    const std::string& name = a.name;
    if (exists && mode == SegmentMode::recreate) {
        // Old users keep their mapping and their (now unlinked) lock file.
        ::unlink(a.seg_path.c_str());
        ::unlink(a.lock_path.c_str());
        mode = SegmentMode::create_only;
        return Step::retry;
    }
    if (exists && mode == SegmentMode::create_only) {
        return make_error(Errc::already_exists, "Segment::open: mode=create_only: segment '{}' already exists ({})",
                          name, a.seg_path.string());
    }
    if (exists) {
        auto opened = open_segment(a, a.read_only);
        if (!opened) {
            return std::unexpected(opened.error());
        }
        if (*opened == Opened::incomplete) {
            if (mode != SegmentMode::open_or_create) {
                return make_error(Errc::broken,
                                  "Segment::open: segment '{}': {} is incomplete (its creator died while "
                                  "creating it); `strata shm gc` removes it",
                                  name, a.seg_path.string());
            }
            ::unlink(a.seg_path.c_str());
            ::unlink(a.lock_path.c_str());
            return Step::retry;
        }
    } else {
        if (!may_create(mode)) {
            return missing_segment(a, mode);
        }
        if (auto made = create_segment(a, size, permissions, created); !made) {
            return std::unexpected(made.error());
        }
    }
    return Step::done;
}

/// One try at attaching; `retry` when the files changed under it. Every step
/// is undone by its guard unless the whole try succeeds.
Result<Step> attach_once(Attachment& a, SegmentMode& mode, std::size_t size, mode_t permissions) {
    const std::string& name = a.name;
    bool created_lock = false;
    if (auto opened = open_lock_file(a, may_create(mode), permissions, created_lock); !opened) {
        if (opened.error().code != Errc::not_found) {
            return std::unexpected(opened.error());
        }
        if (!may_create(mode)) {
            return missing_segment(a, mode);
        }
        return Step::retry;  // removed between our create and open
    }
    ScopeGuard close_lock([&] {
        if (created_lock) {
            ::unlink(a.lock_path.c_str());
        }
        ::close(a.lock_fd);  // drops every OFD lock taken through it
        a.lock_fd = -1;
    });
    if (!take_guard(a.lock_fd, a.read_only ? F_RDLCK : F_WRLCK)) {
        return make_sys_error(errno, "Segment::open: segment '{}': cannot take the guard of {}", name,
                              a.lock_path.string());
    }
    if (!same_file(a.lock_fd, a.lock_path)) {
        created_lock = false;
        return Step::retry;  // the lock file was removed or replaced meanwhile
    }

    bool exists = true;
    if (auto fd = open_trusted(a.seg_path, a.read_only ? O_RDONLY : O_RDWR, a.group_access, "Segment::open",
                               fmt::format("segment '{}': file", name));
        fd) {
        a.seg_fd = *fd;
    } else if (fd.error().code == Errc::not_found) {
        exists = false;
    } else {
        return std::unexpected(fd.error());
    }
    bool created_seg = false;
    ScopeGuard close_seg([&] {
        if (created_seg) {
            ::unlink(a.seg_path.c_str());
        }
        if (a.seg_fd >= 0) {
            ::close(a.seg_fd);
            a.seg_fd = -1;
        }
    });
    ScopeGuard unmap([&] {
        if (a.base != nullptr) {
            ::munmap(a.base, a.size);
            a.base = nullptr;
        }
    });

    if (auto step = open_or_create_segment(a, mode, exists, size, permissions, created_seg);
        !step || *step == Step::retry) {
        return step;
    }
    if (auto claimed = claim_user_slot(a); !claimed) {
        return std::unexpected(claimed.error());
    }
    drop_guard(a.lock_fd);
    unmap.dismiss();
    close_seg.dismiss();
    close_lock.dismiss();
    return Step::done;
}

}  // namespace

Result<std::unique_ptr<Attachment>> attach(std::string_view name, int mode_value, std::size_t size,
                                           const std::filesystem::path& dir, bool group_access) {
    auto mode = static_cast<SegmentMode>(mode_value);
    const mode_t permissions = group_access ? 0660 : 0600;
    auto a = std::make_unique<Attachment>();
    a->name = std::string(name);
    a->dir = dir;
    a->seg_path = dir / fmt::format("strata.{}.seg", name);
    a->lock_path = dir / fmt::format("strata.{}.lock", name);
    a->read_only = mode == SegmentMode::read_only;
    a->group_access = group_access;
    a->fork_generation = fork_generation();
    for (int attempt = 0; attempt < 100; ++attempt) {
        auto step = attach_once(*a, mode, size, permissions);
        if (!step) {
            return std::unexpected(step.error());
        }
        if (*step == Step::done) {
            register_attachment(a.get());
            return a;
        }
    }
    return make_error(Errc::busy, "Segment::open: segment '{}': the files kept changing under this call", name);
}

Result<void> detach(Attachment& a) {
    unregister_attachment(&a);
    bool removed = false;
    if (a.forked()) {
        // A forked child's copy: the parent's locks and files are not ours to touch.
        ::munmap(a.base, a.size);
    } else if (a.read_only) {
        // The guard shared keeps writers from attaching while we look; a reader
        // cannot take the user bytes, so it asks whether anyone else holds one.
        if (take_guard(a.lock_fd, F_RDLCK)) {
            ofd_lock(a.lock_fd, F_UNLCK, kReaderByte, 1);
            struct flock fl {};
            fl.l_type = F_WRLCK;
            fl.l_whence = SEEK_SET;
            fl.l_start = 1;
            fl.l_len = kReaderByte;
            const bool last = ::fcntl(a.lock_fd, F_OFD_GETLK, &fl) == 0 && fl.l_type == F_UNLCK;
            if (last && same_file(a.lock_fd, a.lock_path) && same_file(a.seg_fd, a.seg_path)) {
                removed = ::unlink(a.seg_path.c_str()) == 0;
                ::unlink(a.lock_path.c_str());
            }
        }
    } else if (take_guard(a.lock_fd, F_WRLCK)) {
        ofd_lock(a.lock_fd, F_UNLCK, static_cast<off_t>(a.slot), 1);
        const bool last = ofd_lock(a.lock_fd, F_WRLCK, 1, kReaderByte);
        if (last && same_file(a.lock_fd, a.lock_path) && same_file(a.seg_fd, a.seg_path)) {
            ::unlink(a.seg_path.c_str());
            ::unlink(a.lock_path.c_str());
            removed = true;
        }
    }
    if (!a.forked()) {
        ::munmap(a.base, a.size);
    }
    a.base = nullptr;
    if (a.seg_fd >= 0) {
        ::close(a.seg_fd);
    }
    if (a.lock_fd >= 0) {
        ::close(a.lock_fd);  // releases every OFD lock this attachment held
    }
    a.seg_fd = a.lock_fd = -1;
    detail::log().debug("shm: detached from segment '{}'{}", a.name, removed ? " (last user: removed)" : "");
    return {};
}

bool Attachment::forked() const noexcept {
    return fork_generation != shm_detail::fork_generation();
}

Error forked_error(const Attachment& a, std::string_view op) {
    return Error{Errc::invalid_argument,
                 fmt::format("{}: segment '{}' was opened before this process (pid {}) was forked from its opener: "
                             "a forked child is not a user of the segment; open it again in the child",
                             op, a.name, ::getpid()),
                 0};
}

IndexLock::IndexLock(Attachment& attachment, bool exclusive) : attachment_(attachment), guard_(attachment.index_mutex) {
    if (!take_byte(attachment_.lock_fd, exclusive ? F_WRLCK : F_RDLCK, kIndexByte)) {
        const int err = errno;
        status_ = make_sys_error(err, "segment '{}': cannot take the name index (byte {} of {})", attachment_.name,
                                 kIndexByte, attachment_.lock_path.string());
    }
}

IndexLock::~IndexLock() {
    if (status_) {
        ofd_lock(attachment_.lock_fd, F_UNLCK, kIndexByte, 1);
    }
}

bool Attachment::alive(std::uint64_t other) const {
    if (other == token) {
        return true;
    }
    const unsigned s = slot_of(other);
    if (s == 0 || s > kMaxUsers) {
        return false;
    }
    if (header->users[s].generation.load(std::memory_order_acquire) != generation_of(other)) {
        return false;
    }
    struct flock fl {};
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    fl.l_start = static_cast<off_t>(s);
    fl.l_len = 1;
    if (::fcntl(lock_fd, F_OFD_GETLK, &fl) != 0) {
        return true;  // cannot tell: never declare a live user dead
    }
    return fl.l_type != F_UNLCK;
}

std::string Attachment::describe(std::uint64_t other) const {
    const unsigned s = slot_of(other);
    if (s == 0 || s > kMaxUsers) {
        return fmt::format("an unknown user (token {:#x})", other);
    }
    const UserEntry& u = header->users[s];
    const std::uint64_t generation = generation_of(other);
    if (u.generation.load(std::memory_order_acquire) == generation) {
        return fmt::format("user {} (pid {} '{}')", s, u.pid,
                           std::string_view(u.comm, ::strnlen(u.comm, sizeof u.comm)));
    }
    if (u.previous_generation == generation) {
        return fmt::format("user {} (pid {} '{}'; its slot is now pid {}'s)", s, u.previous_pid,
                           std::string_view(u.previous_comm, ::strnlen(u.previous_comm, sizeof u.previous_comm)),
                           u.pid);
    }
    return fmt::format("a former user of slot {} (generation {}; its pid is no longer recorded)", s, generation);
}

void Attachment::mark_broken(const std::string& reason) const {
    std::uint32_t expected = 0;
    if (header->broken.compare_exchange_strong(expected, 2)) {
        copy_name(header->broken_reason, sizeof header->broken_reason, reason);
        header->broken.store(1, std::memory_order_release);
    }
}

std::string Attachment::broken_reason() const {
    const std::uint32_t state = header->broken.load(std::memory_order_acquire);
    if (state == 0) {
        return {};
    }
    for (int i = 0; i < 1000 && header->broken.load(std::memory_order_acquire) == 2; ++i) {
        std::this_thread::sleep_for(std::chrono::microseconds(10));
    }
    std::string reason(header->broken_reason, ::strnlen(header->broken_reason, sizeof header->broken_reason));
    if (reason.empty()) {
        reason =
            fmt::format("segment '{}' is marked broken, but the user that marked it died before writing why", name);
    }
    return reason;
}

}  // namespace strata::shm_detail
