// SPDX-License-Identifier: MIT
// Tiered memory regions: strata's core data model (docs/regions.md).
//
// A Region is one contiguous, page-aligned range of virtual memory whose pages
// live in a tier chosen at creation:
//
//   memory    anonymous private memory;
//   shared    a named POSIX shared-memory segment (/dev/shm/<name>) that other
//             processes of the node map by name;
//   storage   a file or block device mapped at an offset; the file's space is
//             reserved at creation (fallocate), so a full file system is an
//             error here and never a SIGBUS later;
//   combined  one range of N bytes whose first or last part is memory and the
//             rest storage, split by a factor in [0, 1] or automatically from
//             the memory the process may use.
//
// Storage write-back (the `Writeback` option):
//   kernel    (default) MAP_SHARED. Stores reach the page cache at once and the
//             kernel may write them back at any time, so the region can be
//             larger than memory. sync() makes them durable; its cost follows
//             the dirty pages, because the kernel tracks them.
//   explicit_sync  MAP_PRIVATE. Stores stay in this process until sync() writes
//             the changed pages (found through /proc/self/pagemap) to the file.
//             This is what makes close({.discard = true}) real: changes since
//             the last sync never reach the file. Unsynced changes must fit in
//             memory (they are anonymous pages).
//   direct    explicit_sync for data written once (a checkpoint): where the
//             file holds no data yet in the storage part's range (a new file,
//             holes, reserved space), the part starts as anonymous memory
//             (huge pages where the kernel allows), so stores take no
//             page-cache faults; sync() writes the changed pages with O_DIRECT
//             (buffered where the file system refuses it) and maps the file
//             back over them. Over data the file already holds it is a private
//             file mapping, as explicit_sync. Like explicit_sync, another
//             mapping of the same bytes sees the stores only after sync().
//
// Example:
//
//   auto r = strata::Region::combined(1 << 30, {.storage = {.path = "/data/x.bin"},
//                                               .factor = strata::Factor::fixed(0.5)});
//   if (!r) { fmt::print(stderr, "{}\n", r.error().what()); return 1; }
//   std::memset(r->data(), 1, r->size());
//   if (auto s = r->sync(); !s) { ... }
//
// Errors: every factory validates its arguments before creating anything and
// returns an Error naming the parameter, the value and the cause (see
// error.hpp); on failure nothing is left mapped, open or created, and a file
// that was grown is shrunk back to its former size.
//
// Thread safety: a Region is move-only and owns its mapping. Loads and stores
// to data() from any thread are the caller's business. sync(), sync_async(),
// advise(), placement() and stats() may be called from several threads at once
// for kernel write-back; with explicit_sync, sync() must not run while other
// threads store to the range being synced (a store racing with it may be lost).
// close() and destruction must not race with any other use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <sys/types.h>

#include "strata/error.hpp"

namespace strata {

namespace background_fill {
class Fill;  // src/region/background_fill.hpp
}

/// The kind of a region, fixed at creation.
enum class RegionKind { memory, shared, storage, combined };

/// Where one address of a region lives.
enum class Tier { memory, shared, storage };

/// In a combined region, which part comes first in the address range.
enum class Order { memory_first, storage_first };

/// When stores to storage reach the file; see the header comment.
enum class Writeback { kernel, explicit_sync, direct };

/// How a shared segment is opened.
enum class OpenMode {
    create_only,     ///< fails with already_exists if the name exists
    open_only,       ///< fails with not_found if the name does not exist
    open_or_create,  ///< opens an existing segment or creates it
};

/// Access advice, passed to the kernel (madvise, and posix_fadvise for files).
enum class Advice {
    normal,        ///< MADV_NORMAL
    sequential,    ///< MADV_SEQUENTIAL: aggressive read-ahead, pages freed after use
    random,        ///< MADV_RANDOM: no read-ahead
    read_mostly,   ///< MADV_WILLNEED: read ahead now, pages are expected to be read
    write_mostly,  ///< MADV_RANDOM + no read-ahead on the file: pages are mostly overwritten
};

std::string_view to_string(RegionKind kind) noexcept;
std::string_view to_string(Tier tier) noexcept;
std::string_view to_string(Order order) noexcept;
std::string_view to_string(Writeback writeback) noexcept;
std::string_view to_string(Advice advice) noexcept;

/// Parses "memory_first" / "storage_first"; errors name `param` and the value.
Result<Order> parse_order(std::string_view text, std::string_view param = "order");
/// Parses "kernel" / "explicit_sync" / "direct".
Result<Writeback> parse_writeback(std::string_view text, std::string_view param = "writeback");
/// Parses "normal", "sequential", "random", "read_mostly", "write_mostly".
Result<Advice> parse_advice(std::string_view text, std::string_view param = "advice");

/// The memory share of a combined region: a fixed fraction or `automatic`.
class Factor {
public:
    /// A fixed fraction in [0, 1]; out-of-range values are rejected when the
    /// region is created (so the error can name the parameter).
    static Factor fixed(double fraction) noexcept { return Factor(fraction, false); }
    /// Keep in memory what fits in the memory available to the process
    /// (MemAvailable, or the cgroup limit when lower, minus a safety margin).
    static Factor automatic() noexcept { return Factor(0.0, true); }
    /// Parses "0.25", "1", "auto"; errors name `param` and the value.
    static Result<Factor> parse(std::string_view text, std::string_view param = "factor");

    [[nodiscard]] bool is_auto() const noexcept { return auto_; }
    [[nodiscard]] double fraction() const noexcept { return fraction_; }

private:
    Factor(double fraction, bool is_auto) : fraction_(fraction), auto_(is_auto) {}
    double fraction_;
    bool auto_;
};

/// Options of a shared region.
struct SharedOptions {
    std::string name;  ///< 1..200 characters, no '/', not "." or ".."
    OpenMode mode = OpenMode::create_only;
    mode_t permissions = 0600;  ///< of a created segment
    bool read_only = false;     ///< map PROT_READ only
};

/// Options of a storage region or of the storage part of a combined region.
///
/// Reusing a file (restart, by design) is guarded against files planted by
/// another user (docs/regions.md, "Reusing a file"): the path is opened with
/// O_NOFOLLOW, so a symbolic link is refused, and an existing regular file
/// owned by another user is refused unless allow_other_owner is set. Both are
/// permission_denied errors naming the file, its owner and its mode.
struct StorageOptions {
    std::filesystem::path path;  ///< regular file (created if absent) or block device; not a symbolic link
    std::uint64_t offset = 0;    ///< where the region starts; a multiple of the page size
    mode_t permissions = 0600;   ///< of a created file
    Writeback writeback = Writeback::kernel;
    bool read_only = false;  ///< open O_RDONLY and map PROT_READ; the file must hold the range
    /// Only create: an existing file (or link) at `path` is already_exists,
    /// never opened (O_CREAT | O_EXCL). For private files of one run.
    bool create_only = false;
    /// Accept an existing regular file owned by another user (a data set
    /// shared on purpose). Off: such a file is refused, since whoever owns it
    /// can read and change what the region holds.
    bool allow_other_owner = false;
    /// With Writeback::direct, where the kernel tracks stores (Linux 6.7+):
    /// a storage part over bytes the file already holds also starts as
    /// anonymous memory, read from the file with several large O_DIRECT
    /// reads in flight (faster than one stream of read-ahead, and no
    /// page-cache faults afterwards). Only changed pages are written back.
    /// Elsewhere the part is the usual private file mapping.
    ///
    /// Where this process may handle missing pages for the kernel's own
    /// accesses too (userfaultfd; CAP_SYS_PTRACE or
    /// vm.unprivileged_userfaultfd=1), the factory returns as soon as the
    /// reads are started and the part is filled behind the program
    /// (Region::fills_behind()): an access to a page not read yet waits for
    /// its 2 MiB chunk only, which is read next. A read that fails (or a
    /// file that shrank meanwhile) makes the pages not read raise SIGBUS,
    /// and sync(), write_changed() and close() return the error and write
    /// nothing back. fork() waits until running fills end, so the child has
    /// every byte. Elsewhere the factory reads the whole part first.
    bool fill = false;
    /// The fill's reader threads; 0: fill_readers_for(the CPUs this process
    /// may run on, 1). The MPI layer gives fill_readers_for(the CPUs of the
    /// window's ranks on the node, those of them that fill at once).
    unsigned fill_readers = 0;
};

/// The reader threads of one of `sharers` fills running at once on `cpus`
/// CPUs: 2 * cpus / sharers, from 1 to 8. Each reader waits on the disk and
/// then copies its chunk; more readers than about two per CPU only take the
/// CPUs from the programs that wait for the data
/// (docs/mpi-storage-windows.md, "Why the node's ranks share the readers").
[[nodiscard]] unsigned fill_readers_for(unsigned cpus, unsigned sharers) noexcept;

/// Options of a combined region.
struct CombinedOptions {
    StorageOptions storage;
    Factor factor = Factor::fixed(0.5);
    Order order = Order::memory_first;
    /// A file to map the memory part from, shared (MAP_SHARED), instead of
    /// private anonymous memory: processes that map the same file (a tmpfs
    /// file, a memfd) see each other's stores there. Grown to the memory
    /// part's size if shorter; not owned (the caller closes it, the mapping
    /// outlives it). -1: private memory.
    int shared_memory_fd = -1;
};

/// Options of close().
struct CloseOptions {
    /// Remove the file or segment after unmapping (not allowed for block devices).
    bool unlink = false;
    /// Changes since the last sync() never reach the file. Needs
    /// Writeback::explicit_sync or direct: with kernel write-back the kernel may already
    /// have written them, so close() refuses rather than pretend.
    bool discard = false;
    /// Undo what the factory did to the file system, for a caller whose own
    /// set-up failed after the region was made: nothing is written back (as
    /// with discard, but allowed with either write-back), a file the factory
    /// created is removed and a file it grew is shrunk back to its old size —
    /// unless someone grew the file further since, then it is left alone. Stores that kernel write-back
    /// already put into the part of the file that existed before stay there.
    bool roll_back = false;
};

/// Residency and dirtiness of a region, from /proc/self/smaps.
struct RegionStats {
    std::size_t size = 0;            ///< bytes in the region
    std::size_t memory_bytes = 0;    ///< bytes placed in memory or shared memory
    std::size_t storage_bytes = 0;   ///< bytes placed on storage
    std::size_t resident_bytes = 0;  ///< bytes currently in RAM (page cache included)
    std::size_t dirty_bytes = 0;     ///< storage-backed bytes not yet durable
};

/// Information on the memory a process may use, for Factor::automatic().
struct MemoryBudget {
    std::uint64_t mem_available = 0;  ///< MemAvailable of /proc/meminfo
    std::uint64_t cgroup_room = 0;    ///< cgroup limit minus usage; 0 if no limit applies
    bool cgroup_limited = false;
    std::uint64_t margin = 0;  ///< kept free for the rest of the process
    std::uint64_t usable = 0;  ///< what an automatic factor may place in memory
};

/// Reads the memory budget of this process now.
Result<MemoryBudget> current_memory_budget();

/// A contiguous, page-aligned range of virtual memory in one or two tiers.
class Region {
public:
    /// Anonymous private memory of `size` bytes (rounded up to pages).
    static Result<Region> memory(std::size_t size);
    /// A named shared segment. With open_only, size 0 maps the whole segment
    /// and a size above the segment's is invalid_argument (opening never
    /// resizes a segment others map); open_or_create grows a smaller segment,
    /// so racing creators of the same size both succeed.
    static Result<Region> shared(std::size_t size, const SharedOptions& options);
    /// A file or block device mapped from options.offset for `size` bytes.
    static Result<Region> storage(std::size_t size, const StorageOptions& options);
    /// `size` bytes: factor × size rounded down to pages in memory, the rest on
    /// storage (factor 1: no storage part and no file). Both parts start on a
    /// page boundary, so with storage_first and a size that is not a page
    /// multiple the memory part is that much shorter.
    static Result<Region> combined(std::size_t size, const CombinedOptions& options);

    Region(Region&& other) noexcept;
    Region& operator=(Region&& other) noexcept;
    Region(const Region&) = delete;
    Region& operator=(const Region&) = delete;
    /// Closes with default options; an error is logged, never thrown.
    ~Region();

    [[nodiscard]] std::byte* data() const noexcept { return base_; }
    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    [[nodiscard]] std::span<std::byte> bytes() const noexcept { return {base_, size_}; }
    [[nodiscard]] RegionKind kind() const noexcept { return kind_; }
    [[nodiscard]] bool is_open() const noexcept { return base_ != nullptr; }
    /// The write-back the storage part uses (kernel for regions without one).
    [[nodiscard]] Writeback writeback() const noexcept { return writeback_; }
    /// Bytes of the range placed in memory (memory and shared tiers).
    [[nodiscard]] std::size_t memory_bytes() const noexcept;
    /// Bytes of the range placed on storage.
    [[nodiscard]] std::size_t storage_bytes() const noexcept;
    /// The file or device of the storage part; empty for memory and shared.
    [[nodiscard]] const std::filesystem::path& path() const noexcept;
    /// The segment name of a shared region; empty otherwise.
    [[nodiscard]] const std::string& name() const noexcept { return name_; }

    /// Makes every storage-backed change in [offset, offset+length) durable
    /// before returning. Cost follows the dirty pages in the range, not its size.
    /// Memory and shared parts need no write-back and are skipped.
    Result<void> sync(std::size_t offset, std::size_t length);
    Result<void> sync() { return sync(0, size_); }
    /// Starts writing back the changes in the range and returns without waiting
    /// for the device; a later sync() is the durability barrier.
    Result<void> sync_async(std::size_t offset, std::size_t length);
    Result<void> sync_async() { return sync_async(0, size_); }
    /// Writes the pages of a direct region's storage part changed since the
    /// last write-back and returns the bytes written, without waiting for the
    /// device to make them durable (sync() does). With `keep_tail`, the last
    /// `keep_tail` bytes of each run of changed pages that ends before the
    /// part does are left for later: write-behind of a sequential writer
    /// should not write the pages it is still filling. Only for regions that
    /// track_writes(); others return 0 and write nothing.
    Result<std::size_t> write_changed(std::size_t keep_tail = 0);
    /// True if the storage part is anonymous memory whose stores the kernel
    /// tracks (Writeback::direct over bytes the file did not hold, on Linux
    /// 6.7+): write-back finds changed pages without reading the whole
    /// pagemap, and the pages stay in memory after a sync.
    [[nodiscard]] bool tracks_writes() const noexcept { return tracker_ >= 0; }
    /// True if the storage part was read from the file into anonymous memory
    /// at creation (StorageOptions::fill).
    [[nodiscard]] bool filled() const noexcept { return filled_; }
    /// True if that read runs behind the program (StorageOptions::fill).
    [[nodiscard]] bool fills_behind() const noexcept { return fill_ != nullptr; }
    /// True unless a fill behind the program is still running.
    [[nodiscard]] bool fill_complete() const noexcept;
    /// Blocks until a fill behind the program ended; its error if it failed
    /// (success at once for other regions).
    Result<void> wait_filled();

    /// Gives the kernel access advice for [offset, offset+length).
    Result<void> advise(Advice advice, std::size_t offset, std::size_t length);
    Result<void> advise(Advice advice) { return advise(advice, 0, size_); }

    /// The tier of `address`; invalid_argument if it is outside the region.
    [[nodiscard]] Result<Tier> placement(const void* address) const;
    /// Residency and dirty bytes, read from /proc/self/smaps.
    [[nodiscard]] Result<RegionStats> stats() const;

    /// Unmaps the region, writes back per `options`, optionally removes the
    /// file or segment. Closing a closed region is invalid_argument; discard
    /// on a shared segment is invalid_argument (peers already see the stores). On an invalid option nothing changes and
    /// the region stays open; otherwise the region is closed even if write-back fails.
    Result<void> close(CloseOptions options = {});

private:
    Region() = default;
    void release() noexcept;

    std::byte* base_ = nullptr;
    std::size_t size_ = 0;
    std::size_t mapped_ = 0;  // size_ rounded up to pages
    RegionKind kind_ = RegionKind::memory;
    Writeback writeback_ = Writeback::kernel;
    int fd_ = -1;       // shared segment, file or device; -1 for memory
    int tracker_ = -1;  // userfaultfd tracking stores to the storage part (written_pages.hpp); -1 if none
    std::vector<std::pair<std::size_t, std::size_t>> unwritten_;  // taken runs a failed write left behind
    bool filled_ = false;  // storage part read into anonymous memory at creation (StorageOptions::fill)
    std::unique_ptr<background_fill::Fill> fill_;  // the read behind the program, if it runs so
    bool unflushed_ = false;  // written without a sync() since (write_changed, sync_async): fdatasync owed
    bool is_block_device_ = false;
    bool read_only_ = false;
    bool created_file_ = false;        // the factory created the file
    std::uint64_t original_size_ = 0;  // file size before the factory grew it
    std::uint64_t grown_to_ = 0;       // file size right after the factory
    std::uint64_t file_offset_ = 0;    // file offset of the storage part
    std::size_t storage_begin_ = 0;    // offset of the storage part within the region
    std::size_t storage_length_ = 0;   // its length in bytes (page multiple except at the end)
    std::filesystem::path path_;
    std::string name_;

    friend struct RegionAccess;  // src/region/region_impl.hpp
};

}  // namespace strata
