// SPDX-License-Identifier: MIT
// What a segment holds, and what a process knows of its attachment to one.
//
// File layout: [SegmentHeader, 128 KiB][Boost segment manager and its heap].
// Lock file layout (OFD locks): byte 0 guards creation, opening and removal
// (read_only users take it shared); byte i (1..kMaxUsers) is held by user i
// while it is attached; kReaderByte is held shared by every read_only user;
// kIndexByte is held exclusively by a writer while it changes the name index
// and shared by a read_only user while it looks a name up (a read_only
// mapping cannot take the index's lock, which lives in the segment).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>

#include <sys/types.h>

#include "strata/error.hpp"
#include "strata/shm/allocator.hpp"

namespace strata::shm_detail {

inline constexpr std::uint64_t kSegmentMagic = 0x5354524154415348ULL;  // "STRATASH"
inline constexpr std::uint32_t kLayoutVersion = 3;                     // 3: ports keep kDeathNotes death notes
inline constexpr unsigned kMaxUsers = 1024;
inline constexpr off_t kReaderByte = kMaxUsers + 1;
inline constexpr off_t kIndexByte = kMaxUsers + 2;
inline constexpr std::size_t kHeaderBytes = 128 * 1024;
inline constexpr std::size_t kMinSegmentBytes = 1024 * 1024;
inline constexpr std::uint64_t kObjectMagic = 0x4f424a5354524154ULL;  // xor-ed with the header's offset

/// One attached (or formerly attached) user.
struct UserEntry {
    std::atomic<std::uint64_t> generation{0};  ///< bumped by each new user of the slot
    std::int32_t pid = 0;                      ///< in the user's own pid namespace
    std::uint32_t reserved = 0;
    std::uint64_t attached_unix_ns = 0;
    char comm[24] = {};  ///< the process name, for messages
    /// The slot's previous user, so a message about a dead user whose slot a
    /// later attacher took still names the dead one.
    std::uint64_t previous_generation = 0;
    std::int32_t previous_pid = 0;
    std::uint32_t reserved2 = 0;
    char previous_comm[24] = {};
};

struct SegmentHeader {
    std::atomic<std::uint64_t> magic{0};  ///< written last at creation
    std::uint32_t version = kLayoutVersion;
    std::uint32_t header_bytes = kHeaderBytes;
    std::uint64_t segment_id = 0;
    std::uint64_t size = 0;
    std::uint64_t created_unix_ns = 0;
    std::atomic<std::uint64_t> next_generation{1};
    std::atomic<std::uint32_t> broken{0};
    std::uint32_t reserved = 0;
    char broken_reason[512] = {};
    char name[256] = {};
    UserEntry users[kMaxUsers + 1];  ///< index 0 unused: tokens never have slot 0
};
static_assert(sizeof(SegmentHeader) <= kHeaderBytes);

/// Precedes every object a Segment makes (named or not).
struct ObjectHeader {
    std::uint64_t magic = 0;  ///< kObjectMagic ^ offset of this header; 0 once freed
    std::uint64_t generation = 0;
    std::uint64_t type = 0;
    std::uint64_t size = 0;
    std::uint64_t start_offset = 0;  ///< bytes from the Boost allocation to this header
    char type_name[88] = {};
};
static_assert(sizeof(ObjectHeader) == 128);

/// A token names one attachment: generation << 16 | slot. Never 0.
inline unsigned slot_of(std::uint64_t token) noexcept {
    return static_cast<unsigned>(token & 0xFFFFU);
}
inline std::uint64_t generation_of(std::uint64_t token) noexcept {
    return token >> 16U;
}

/// This process's view of one attachment to a segment.
struct Attachment {
    std::string name;
    std::filesystem::path dir;
    std::filesystem::path seg_path;
    std::filesystem::path lock_path;
    int seg_fd = -1;
    int lock_fd = -1;
    std::byte* base = nullptr;
    std::size_t size = 0;
    bool read_only = false;
    SegmentHeader* header = nullptr;
    SegmentManager* manager = nullptr;
    unsigned slot = 0;        ///< 0 for read_only users, which hold kReaderByte instead
    std::uint64_t token = 0;  ///< 0 for read_only users: they take no lock in the segment
    bool group_access = false;
    /// The process's fork count when this attachment was made: a forked child
    /// inherits the object but is not a user (see forked()).
    std::uint64_t fork_generation = 0;
    /// Serialises this attachment's holds of kIndexByte (OFD locks do not
    /// exclude threads sharing one open file description).
    std::mutex index_mutex;

    /// True in a child forked after this attachment was made: the child's copy
    /// holds no lock, is no user, and every call through it fails.
    [[nodiscard]] bool forked() const noexcept;

    /// Whether the attachment `token` names is still attached (true for our own).
    [[nodiscard]] bool alive(std::uint64_t other) const;
    /// "user 3 (pid 1234 'worker')" for messages.
    [[nodiscard]] std::string describe(std::uint64_t other) const;
    /// Marks the segment broken with `reason` (the first reason stays).
    void mark_broken(const std::string& reason) const;
    [[nodiscard]] std::string broken_reason() const;
};

/// Opens or creates per the mode (see segment.hpp); implemented in attachment.cpp.
Result<std::unique_ptr<Attachment>> attach(std::string_view name, int mode, std::size_t size,
                                           const std::filesystem::path& dir, bool group_access);
/// Unmaps, releases the user slot, removes the segment if this was the last user.
Result<void> detach(Attachment& attachment);

/// How many times this process's ancestors forked since it started (bumped in the child).
std::uint64_t fork_generation() noexcept;

/// The error a forked child gets when it uses an attachment its parent made.
Error forked_error(const Attachment& attachment, std::string_view op);

/// Holds kIndexByte around a name-index change (writers, exclusive) or lookup
/// (read_only users, shared), bounded to 5 s.
class IndexLock {
public:
    IndexLock(Attachment& attachment, bool exclusive);
    ~IndexLock();
    IndexLock(const IndexLock&) = delete;
    IndexLock& operator=(const IndexLock&) = delete;
    /// Empty when held, else why not.
    [[nodiscard]] Result<void> status() const { return status_; }

private:
    Attachment& attachment_;
    std::unique_lock<std::mutex> guard_;
    Result<void> status_;
};

/// Process-wide map from addresses to attachments, so locks inside a segment
/// find the token of the attachment they are used through.
void register_attachment(Attachment* attachment);
void unregister_attachment(Attachment* attachment);
Attachment* attachment_at(const void* address) noexcept;

/// Futex helpers on a 32-bit word in shared memory.
/// Waits while *word == expected, at most `timeout_ns`; false on timeout.
bool futex_wait(const std::atomic<std::uint32_t>* word, std::uint32_t expected, long timeout_ns) noexcept;
void futex_wake_all(const std::atomic<std::uint32_t>* word) noexcept;

/// The owner-token lock used by segment and port locks: `owner` holds the
/// owner's attachment token (0 when free); waiters sleep on its low 32 bits.
struct TokenLock {
    std::atomic<std::uint64_t> owner{0};
    std::atomic<std::uint32_t> waiters{0};
    std::uint32_t reserved = 0;
};
/// What lock_words does when it finds the lock's owner dead.
enum class DeadOwner {
    report,     ///< return its token without the lock (the caller marks its structure broken)
    take_over,  ///< take the lock from it (like EOWNERDEAD): the caller repairs what it guards
};
/// Acquires the lock for `self`; returns 0, or the token of the dead owner
/// found holding it: with DeadOwner::take_over the lock is then held by
/// `self`, with DeadOwner::report it is not.
std::uint64_t lock_words(std::atomic<std::uint64_t>& owner, std::atomic<std::uint32_t>& waiters, const Attachment& self,
                         DeadOwner on_dead);
void unlock_words(std::atomic<std::uint64_t>& owner, std::atomic<std::uint32_t>& waiters);
/// Port locks: always DeadOwner::take_over (port_repair.cpp repairs the port).
inline std::uint64_t lock_token(TokenLock& lock, const Attachment& self) {
    return lock_words(lock.owner, lock.waiters, self, DeadOwner::take_over);
}
inline void unlock_token(TokenLock& lock) {
    unlock_words(lock.owner, lock.waiters);
}

/// How often waits re-check liveness.
inline constexpr long kLivenessTickNs = 20'000'000;

}  // namespace strata::shm_detail
