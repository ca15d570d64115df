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

/// Takes the guard byte, retrying for up to 5 s (a live holder holds it briefly).
bool take_guard(int fd) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!ofd_lock(fd, F_WRLCK, 0, 1)) {
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

void drop_guard(int fd) {
    ofd_lock(fd, F_UNLCK, 0, 1);
}

bool same_file(int fd, const fs::path& path) {
    struct stat by_fd {};
    struct stat by_path {};
    return ::fstat(fd, &by_fd) == 0 && ::stat(path.c_str(), &by_path) == 0 && by_fd.st_ino == by_path.st_ino &&
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

std::size_t page_round_up(std::size_t n) {
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    return (n + page - 1) / page * page;
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

/// Everything attach() made so far, undone unless released.
struct Attempt {
    std::unique_ptr<Attachment> a = std::make_unique<Attachment>();
    bool created_lock = false;
    bool created_seg = false;
    bool guard = false;

    void undo() {
        if (a->base != nullptr) {
            ::munmap(a->base, a->size);
            a->base = nullptr;
        }
        if (created_seg) {
            ::unlink(a->seg_path.c_str());
        }
        if (created_lock) {
            ::unlink(a->lock_path.c_str());
        }
        if (a->seg_fd >= 0) {
            ::close(a->seg_fd);
            a->seg_fd = -1;
        }
        if (a->lock_fd >= 0) {
            ::close(a->lock_fd);
            a->lock_fd = -1;
        }
        created_lock = created_seg = guard = false;
    }
};

Result<void> map_segment(Attachment& a, std::size_t size, bool read_only) {
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, a.seg_fd, 0);
    if (p == MAP_FAILED) {
        return make_sys_error(errno, "Segment::open: segment '{}': cannot map {} bytes of {}", a.name, size,
                              a.seg_path.string());
    }
    a.base = static_cast<std::byte*>(p);
    a.size = size;
    a.header = reinterpret_cast<SegmentHeader*>(a.base);
    a.manager = reinterpret_cast<SegmentManager*>(a.base + kHeaderBytes);
    if (read_only) {
        // Locks live in the header and the segment manager; the objects after them are read-only.
        const std::size_t writable = page_round_up(kHeaderBytes + sizeof(SegmentManager));
        if (writable < size && ::mprotect(a.base + writable, size - writable, PROT_READ) != 0) {
            return make_sys_error(errno, "Segment::open: segment '{}': cannot protect the objects read-only", a.name);
        }
    }
    return {};
}

Result<void> create_segment(Attempt& t, std::size_t size, mode_t permissions) {
    Attachment& a = *t.a;
    a.seg_fd = ::open(a.seg_path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, permissions);
    if (a.seg_fd < 0) {
        return make_sys_error(errno, "Segment::open: segment '{}': cannot create {}", a.name, a.seg_path.string());
    }
    t.created_seg = true;
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
    } catch (const std::exception&) {
    }
    unregister_attachment(&a);
    header->magic.store(kSegmentMagic, std::memory_order_release);
    return {};
}

enum class Opened { ok, incomplete };

Result<Opened> open_segment(Attempt& t, bool read_only) {
    Attachment& a = *t.a;
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
    for (unsigned i = 1; i <= kMaxUsers; ++i) {
        if (ofd_lock(a.lock_fd, F_WRLCK, static_cast<off_t>(i), 1)) {
            UserEntry& u = a.header->users[i];
            const std::uint64_t generation = u.generation.load() + 1;
            u.generation.store(generation, std::memory_order_release);
            u.pid = ::getpid();
            u.attached_unix_ns = unix_ns();
            copy_name(u.comm, sizeof u.comm, process_name());
            a.slot = i;
            a.token = (generation << 16U) | i;
            return {};
        }
    }
    return make_error(Errc::busy, "Segment::open: segment '{}' already has {} users attached", a.name, kMaxUsers);
}

}  // namespace

Result<std::unique_ptr<Attachment>> attach(std::string_view name, int mode_value, std::size_t size,
                                           const std::filesystem::path& dir, bool group_access) {
    auto mode = static_cast<SegmentMode>(mode_value);
    const mode_t permissions = group_access ? 0660 : 0600;
    const bool read_only = mode == SegmentMode::read_only;
    Attempt t;
    t.a->name = std::string(name);
    t.a->dir = dir;
    t.a->seg_path = dir / fmt::format("strata.{}.seg", name);
    t.a->lock_path = dir / fmt::format("strata.{}.lock", name);
    t.a->read_only = read_only;
    Attachment& a = *t.a;

    for (int attempt = 0; attempt < 100; ++attempt) {
        const bool may_create =
            mode == SegmentMode::create_only || mode == SegmentMode::open_or_create || mode == SegmentMode::recreate;
        a.lock_fd = ::open(a.lock_path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, permissions);
        if (a.lock_fd >= 0) {
            t.created_lock = true;
            ::fchmod(a.lock_fd, permissions);
        } else if (errno == EEXIST) {
            a.lock_fd = ::open(a.lock_path.c_str(), O_RDWR | O_CLOEXEC);
            if (a.lock_fd < 0 && errno == ENOENT) {
                continue;  // removed meanwhile
            }
        }
        if (a.lock_fd < 0) {
            const int err = errno;
            t.undo();
            return make_sys_error(err, "Segment::open: segment '{}': cannot open the lock file {}", name,
                                  a.lock_path.string());
        }
        if (!take_guard(a.lock_fd)) {
            const int err = errno;
            t.undo();
            return make_sys_error(err, "Segment::open: segment '{}': cannot take the guard of {}", name,
                                  a.lock_path.string());
        }
        if (!same_file(a.lock_fd, a.lock_path)) {
            t.created_lock = false;
            t.undo();  // the lock file was removed or replaced meanwhile
            continue;
        }

        a.seg_fd = ::open(a.seg_path.c_str(), (read_only ? O_RDWR : O_RDWR) | O_CLOEXEC);
        const bool exists = a.seg_fd >= 0;
        if (!exists && errno != ENOENT) {
            const int err = errno;
            t.undo();
            return make_sys_error(err, "Segment::open: segment '{}': cannot open {}", name, a.seg_path.string());
        }
        if (exists && mode == SegmentMode::recreate) {
            // Old users keep their mapping and their (now unlinked) lock file.
            ::unlink(a.seg_path.c_str());
            ::unlink(a.lock_path.c_str());
            t.created_lock = false;
            t.undo();
            mode = SegmentMode::create_only;
            continue;
        }
        if (exists && mode == SegmentMode::create_only) {
            t.created_lock = false;
            t.undo();
            return make_error(Errc::already_exists, "Segment::open: mode=create_only: segment '{}' already exists ({})",
                              name, a.seg_path.string());
        }
        if (exists) {
            auto opened = open_segment(t, read_only);
            if (!opened) {
                t.created_lock = false;
                t.undo();
                return std::unexpected(opened.error());
            }
            if (*opened == Opened::incomplete) {
                if (mode != SegmentMode::open_or_create) {
                    t.created_lock = false;
                    t.undo();
                    return make_error(Errc::io_error,
                                      "Segment::open: segment '{}': {} is incomplete (its creator died while "
                                      "creating it); `strata shm gc` removes it",
                                      name, a.seg_path.string());
                }
                ::unlink(a.seg_path.c_str());
                ::unlink(a.lock_path.c_str());
                t.created_lock = false;
                t.undo();
                continue;
            }
        } else {
            if (!may_create) {
                if (!t.created_lock) {
                    t.undo();
                } else {
                    t.undo();  // removes the lock file this call created
                }
                return make_error(Errc::not_found, "Segment::open: mode={}: segment '{}' does not exist in {}",
                                  to_string(mode), name, dir.string());
            }
            if (auto created = create_segment(t, size, permissions); !created) {
                t.undo();
                return std::unexpected(created.error());
            }
        }
        if (auto claimed = claim_user_slot(a); !claimed) {
            if (t.created_seg) {
                t.undo();
            } else {
                t.created_lock = false;
                t.undo();
            }
            return std::unexpected(claimed.error());
        }
        drop_guard(a.lock_fd);
        register_attachment(&a);
        return std::move(t.a);
    }
    t.undo();
    return make_error(Errc::busy, "Segment::open: segment '{}': the files kept changing under this call", name);
}

Result<void> detach(Attachment& a) {
    unregister_attachment(&a);
    bool removed = false;
    if (take_guard(a.lock_fd)) {
        ofd_lock(a.lock_fd, F_UNLCK, static_cast<off_t>(a.slot), 1);
        const bool last = ofd_lock(a.lock_fd, F_WRLCK, 1, kMaxUsers);
        if (last && same_file(a.lock_fd, a.lock_path) && same_file(a.seg_fd, a.seg_path)) {
            ::unlink(a.seg_path.c_str());
            ::unlink(a.lock_path.c_str());
            removed = true;
        }
    }
    ::munmap(a.base, a.size);
    a.base = nullptr;
    ::close(a.seg_fd);
    ::close(a.lock_fd);  // releases every OFD lock this attachment held
    a.seg_fd = a.lock_fd = -1;
    detail::log().debug("shm: detached from segment '{}'{}", a.name, removed ? " (last user: removed)" : "");
    return {};
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
    return fmt::format("user {} (pid {} '{}')", s, u.pid, std::string_view(u.comm, ::strnlen(u.comm, sizeof u.comm)));
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
    return std::string(header->broken_reason, ::strnlen(header->broken_reason, sizeof header->broken_reason));
}

}  // namespace strata::shm_detail
