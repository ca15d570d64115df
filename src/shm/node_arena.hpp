// SPDX-License-Identifier: MIT
// The node arena: where a process's large message buffers live once it shares
// them with the other ranks of its node (docs/dsm.md, "Same-node data").
//
// A DSM rank hands a chunk's bytes to a rank of the same node by reference:
// the bytes stay in the writer's buffer, the reader copies them out of it, and
// MPI carries a few dozen bytes instead of pipelining megabytes through its
// shared cells (which needs both processes on a core at once: 1.6-2.2 ms for
// 2 MB on a loaded node, 0.2 ms for the reader's own copy). For that, the
// buffer must be memory the reader can map: the arena is one memfd per
// process, mapped shared, from which every net::Bytes of at least 1 MiB is
// allocated once the arena is installed (net/bytes.hpp). Smaller buffers, and
// every buffer when no arena is installed or it is full, stay on the heap.
//
// Each block of the arena starts with a page of its own: a magic number and,
// per reader (a rank's index on its node, below kMaxReaders), a count of the
// references it holds. The owner raises a reader's count before it sends a
// reference and keeps the buffer (never writes or frees it) until the count is
// back to zero; the reader lowers it once it copied the bytes. A reader found
// dead gives its holds up through the owner (drop_holds). Freed blocks are
// punched out of the memfd: the arena holds only live buffers' pages.
//
// Another process maps the arena through /proc/<pid>/fd/<fd> (PeerArena), and
// keeps it only when the file is the caller's own, has the announced size and
// carries the announced random id in its first page: a recycled pid or another
// user's file is refused by name.
//
// fork: the child's view of the arena becomes a private copy of the blocks in
// use (the parent's buffers stay the parent's; the child's writes are its
// own), and the child shares nothing (is_shared() false).
//
// Thread safety: every call may run from several threads at once.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <span>

#include <sys/types.h>

#include "strata/error.hpp"

namespace strata::shm_detail {

/// The page in front of every block: what owner and readers share about it.
struct ArenaBlock {
    static constexpr std::uint64_t kMagic = 0x6b636f6c62617473ULL;  // "stablock"
    static constexpr int kMaxReaders = 64;
    std::uint64_t magic = kMagic;
    std::uint64_t length = 0;  ///< the block's data bytes (page-rounded)
    std::array<std::atomic<std::uint32_t>, kMaxReaders> holds{};
};

/// What a process announces so that the others of its node can map its arena.
struct ArenaAnnounce {
    std::int32_t pid = 0;  ///< 0: no arena
    std::int32_t fd = -1;
    std::uint64_t capacity = 0;
    std::array<std::uint64_t, 2> id{};
};

class NodeArena {
public:
    static constexpr std::size_t kPage = 4096;
    /// Address space reserved per process; pages exist only under live buffers.
    static constexpr std::size_t kCapacity = std::size_t{8} << 30;

    /// The process's arena, created at the first call: io_error naming the call that failed.
    static Result<NodeArena*> install();
    /// The installed arena, or null.
    static NodeArena* installed() noexcept;

    /// `n` bytes (net::Bytes asks for kNodeArenaMinBytes or more, net/bytes.hpp) of the arena, page-aligned; null when
    /// it has no room.
    void* allocate(std::size_t n) noexcept;
    /// Frees `p` if the arena gave it (true), else does nothing (false).
    bool deallocate(void* p) noexcept;
    /// The block whose data holds [p, p + n); null when no single live block does.
    ArenaBlock* block_of(const void* p, std::size_t n) const noexcept;
    /// The offset of `block`'s header page in the arena (what a reference names).
    [[nodiscard]] std::uint64_t offset_of(const ArenaBlock* block) const noexcept;

    /// The doorbell (in the arena's first page, so the node's other ranks ring it through their
    /// mapping): a thread about to sleep takes a ticket, checks for work once more, then waits
    /// until a peer rings or `limit` passes. A peer that posted work rings only when someone
    /// sleeps (PeerArena::ring): one atomic load otherwise.
    std::uint32_t doze_ticket() noexcept;
    void doze(std::uint32_t ticket, std::chrono::microseconds limit) noexcept;
    /// Wakes this process's own dozing thread (a send it must now drive), if one dozes.
    void wake() noexcept;

    /// False in a forked child: its copy of the arena is private.
    [[nodiscard]] bool is_shared() const noexcept { return !forked_.load(std::memory_order_acquire); }
    [[nodiscard]] ArenaAnnounce announce() const noexcept;
    /// Bytes of live blocks (headers included).
    [[nodiscard]] std::size_t used() const noexcept;

private:
    NodeArena() = default;
    static void before_fork() noexcept;
    static void after_fork_parent() noexcept;
    static void after_fork_child() noexcept;
    void privatize() noexcept;

    int fd_ = -1;
    std::byte* base_ = nullptr;
    std::array<std::uint64_t, 2> id_{};
    mutable std::mutex mu_;
    std::map<std::uint64_t, std::uint64_t> free_;  ///< offset -> length, coalesced
    std::map<std::uint64_t, std::uint64_t> live_;  ///< header offset -> block length (header included)
    std::size_t used_ = 0;
    std::atomic<bool> forked_{false};
};

/// Another process's arena, mapped to read the blocks it refers to.
class PeerArena {
public:
    /// Maps the arena `a` announces (a process of this node and user): permission_denied naming
    /// the file when it is not the caller's, invalid_argument when its size or id differ,
    /// io_error when it cannot be opened or mapped.
    static Result<PeerArena> open(const ArenaAnnounce& a);
    PeerArena(PeerArena&& other) noexcept;
    PeerArena& operator=(PeerArena&& other) noexcept;
    PeerArena(const PeerArena&) = delete;
    PeerArena& operator=(const PeerArena&) = delete;
    ~PeerArena();

    /// The block at `offset` whose data holds `length` bytes: invalid_argument naming both when
    /// it lies outside the arena or no block starts there.
    [[nodiscard]] Result<std::span<const std::byte>> bytes(std::uint64_t offset, std::uint64_t length) const;
    /// Gives up one hold of reader `reader` on the block at `offset` (checked by bytes()).
    void release(std::uint64_t offset, int reader) const noexcept;
    /// Wakes the owner's thread sleeping on its doorbell (NodeArena::doze), if one is.
    void ring() const noexcept;

private:
    PeerArena() = default;
    std::byte* base_ = nullptr;
    std::size_t capacity_ = 0;
};

}  // namespace strata::shm_detail
