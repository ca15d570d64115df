// SPDX-License-Identifier: MIT
// Owner-token locks over futexes, and the registry that lets locks inside a
// segment find the attachment (and so the token) they are used through.
//
// Why not robust pthread mutexes: their owner is a thread id, and two users
// in different pid namespaces can have equal thread ids - the kernel's robust
// list then "recovers" a lock the wrong owner holds. A token is unique per
// attachment, and its liveness is an OFD lock on the user's byte, which the
// kernel drops when the process dies in any namespace.
#include <array>
#include <climits>
#include <mutex>

#include <linux/futex.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/cpu_relax.hpp"
#include "shm/layout.hpp"
#include "shm/port_layout.hpp"

namespace strata::shm_detail {
namespace {

// The registry grows by chunks that are never freed, so lookups (on every
// lock) read it without a lock while attach/detach change it under one.
constexpr std::size_t kChunkSize = 256;

struct RegistryEntry {
    std::atomic<std::uintptr_t> begin{0};
    std::atomic<std::uintptr_t> end{0};
    std::atomic<Attachment*> attachment{nullptr};
};

struct RegistryChunk {
    std::array<RegistryEntry, kChunkSize> entries;
    std::atomic<RegistryChunk*> next{nullptr};
};

RegistryChunk& registry() {
    static RegistryChunk first;
    return first;
}
std::mutex& registry_mutex() {
    static std::mutex m;
    return m;
}

template <class F>
void for_each_entry(F&& f) {
    for (RegistryChunk* c = &registry(); c != nullptr; c = c->next.load(std::memory_order_acquire)) {
        for (auto& e : c->entries) {
            if (f(e)) {
                return;
            }
        }
    }
}

std::atomic<std::uint64_t> g_fork_generation{0};

// A forked child shares its parent's open file descriptions, and with them the
// OFD locks that say "this user is alive": the child closes its copies of the
// lock files, so the parent's liveness stays its own, and its attachments
// become inert (Attachment::forked).
void before_fork() noexcept {
    registry_mutex().lock();
}
void after_fork_in_parent() noexcept {
    registry_mutex().unlock();
}
void after_fork_in_child() noexcept {
    g_fork_generation.fetch_add(1, std::memory_order_relaxed);
    for_each_entry([](RegistryEntry& e) {
        if (Attachment* a = e.attachment.load(std::memory_order_relaxed); a != nullptr) {
            if (a->lock_fd >= 0) {
                ::close(a->lock_fd);
                a->lock_fd = -1;
            }
            if (a->seg_fd >= 0) {
                ::close(a->seg_fd);
                a->seg_fd = -1;
            }
        }
        return false;
    });
    registry_mutex().unlock();
}

std::uint32_t low_word(std::uint64_t value) {
    return static_cast<std::uint32_t>(value & 0xFFFFFFFFU);
}

const std::atomic<std::uint32_t>* low_half(const std::atomic<std::uint64_t>& word) {
    static_assert(sizeof(std::atomic<std::uint64_t>) == 8 && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__);
    return reinterpret_cast<const std::atomic<std::uint32_t>*>(&word);
}

std::uint64_t thread_tag() {
    static std::atomic<std::uint64_t> counter{1};
    thread_local const std::uint64_t tag = counter.fetch_add(1);
    return tag;
}

Attachment& attachment_or_throw(const void* address) {
    Attachment* a = attachment_at(address);
    if (a == nullptr) {
        throw segment_broken("strata shm: a segment lock was used outside any attached segment");
    }
    if (a->forked()) {
        throw segment_broken(forked_error(*a, "strata shm: a segment lock").message);
    }
    return *a;
}

}  // namespace

std::uint64_t fork_generation() noexcept {
    return g_fork_generation.load(std::memory_order_relaxed);
}

void register_attachment(Attachment* attachment) {
    static std::once_flag fork_handlers;
    std::call_once(fork_handlers, [] { ::pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child); });
    const std::lock_guard guard(registry_mutex());
    RegistryEntry* free_entry = nullptr;
    RegistryChunk* last = nullptr;
    for (RegistryChunk* c = &registry(); c != nullptr && free_entry == nullptr; c = c->next.load()) {
        last = c;
        for (auto& e : c->entries) {
            if (e.attachment.load() == nullptr) {
                free_entry = &e;
                break;
            }
        }
    }
    if (free_entry == nullptr) {
        auto* chunk = new RegistryChunk();  // never freed: lock-free readers may still walk it
        free_entry = &chunk->entries[0];
        last->next.store(chunk, std::memory_order_release);
    }
    free_entry->begin.store(reinterpret_cast<std::uintptr_t>(attachment->base));
    free_entry->end.store(reinterpret_cast<std::uintptr_t>(attachment->base) + attachment->size);
    free_entry->attachment.store(attachment, std::memory_order_release);
}

void unregister_attachment(Attachment* attachment) {
    const std::lock_guard guard(registry_mutex());
    for_each_entry([&](RegistryEntry& e) {
        if (e.attachment.load() == attachment) {
            e.attachment.store(nullptr);
            e.begin.store(0);
            e.end.store(0);
        }
        return false;
    });
}

Attachment* attachment_at(const void* address) noexcept {
    const auto a = reinterpret_cast<std::uintptr_t>(address);
    Attachment* found = nullptr;
    for_each_entry([&](RegistryEntry& e) {
        Attachment* att = e.attachment.load(std::memory_order_acquire);
        if (att != nullptr && e.begin.load(std::memory_order_relaxed) <= a &&
            a < e.end.load(std::memory_order_relaxed)) {
            found = att;
            return true;
        }
        return false;
    });
    return found;
}

bool futex_wait(const std::atomic<std::uint32_t>* word, std::uint32_t expected, long timeout_ns) noexcept {
    timespec ts{.tv_sec = timeout_ns / 1'000'000'000L, .tv_nsec = timeout_ns % 1'000'000'000L};
    const long rc =
        ::syscall(SYS_futex, reinterpret_cast<const std::uint32_t*>(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
    return !(rc != 0 && errno == ETIMEDOUT);
}

void futex_wake_all(const std::atomic<std::uint32_t>* word) noexcept {
    ::syscall(SYS_futex, reinterpret_cast<const std::uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

std::uint64_t lock_words(std::atomic<std::uint64_t>& owner, std::atomic<std::uint32_t>& waiters, const Attachment& self,
                         DeadOwner on_dead) {
    std::uint64_t expected = 0;
    if (owner.compare_exchange_strong(expected, self.token, std::memory_order_acquire)) {
        return 0;
    }
    for (int spin = 0; spin < 200; ++spin) {
        strata::core::cpu_relax();
        expected = 0;
        if (owner.load(std::memory_order_relaxed) == 0 &&
            owner.compare_exchange_weak(expected, self.token, std::memory_order_acquire)) {
            return 0;
        }
    }
    // Sleep on the owner word in bounded steps; between steps, check the owner.
    std::uint64_t last_owner = 0;
    int ticks_with_same_owner = 0;
    for (;;) {
        expected = 0;
        if (owner.compare_exchange_strong(expected, self.token, std::memory_order_acquire)) {
            return 0;
        }
        waiters.fetch_add(1, std::memory_order_seq_cst);
        const bool woken = futex_wait(low_half(owner), low_word(expected), 2'000'000);
        waiters.fetch_sub(1, std::memory_order_relaxed);
        if (woken) {
            continue;
        }
        const std::uint64_t current = owner.load(std::memory_order_relaxed);
        if (current == 0) {
            continue;
        }
        ticks_with_same_owner = current == last_owner ? ticks_with_same_owner + 1 : 0;
        last_owner = current;
        // Every ~20 ms of waiting on the same owner: is it still there?
        if (ticks_with_same_owner % 10 == 9 && !self.alive(current)) {
            if (on_dead == DeadOwner::report) {
                return current;
            }
            // Tokens are never reused, so a dead token in the word can only be
            // replaced by a survivor: one CAS elects the one that repairs.
            std::uint64_t dead = current;
            if (owner.compare_exchange_strong(dead, self.token, std::memory_order_acquire)) {
                return current;
            }
        }
    }
}

void unlock_words(std::atomic<std::uint64_t>& owner, std::atomic<std::uint32_t>& waiters) {
    // seq_cst on both sides (here and the waiter's fetch_add) orders the
    // release before the waiter count is read, so a waiter that went to sleep
    // is always woken; no fence, which ThreadSanitizer cannot follow.
    const std::uint64_t previous = owner.exchange(0, std::memory_order_seq_cst);
    if (waiters.load(std::memory_order_seq_cst) != 0) {
        futex_wake_all(low_half(owner));
    }
    (void)previous;
}

void SegmentMutex::lock() {
    lock_named("allocator");
}

// The allocator's tree and the name index are Boost's: a half-done insert or
// rebalance cannot be told from a finished one, so a dead holder's segment
// cannot be repaired, only replaced.
void SegmentMutex::lock_named(const char* what) {
    Attachment& self = attachment_or_throw(this);
    if (self.header->broken.load(std::memory_order_acquire) != 0) {
        throw segment_broken(self.broken_reason());
    }
    if (const std::uint64_t dead = lock_words(owner_, waiters_, self, DeadOwner::report); dead != 0) {
        const std::string reason = fmt::format(
            "segment '{}' is broken: {} died holding the segment's {} lock, whose state cannot be checked; "
            "close every handle of this segment, then reopen it with SegmentMode::recreate (its objects are lost)",
            self.name, self.describe(dead), what);
        self.mark_broken(reason);
        throw segment_broken(self.broken_reason());
    }
    crash_point(2);  // strata::shm_testing::CrashPoint::allocator_lock_held
}

bool SegmentMutex::try_lock() {
    Attachment& self = attachment_or_throw(this);
    std::uint64_t expected = 0;
    return owner_.compare_exchange_strong(expected, self.token, std::memory_order_acquire);
}

void SegmentMutex::unlock() {
    unlock_words(owner_, waiters_);
}

void SegmentRecursiveMutex::lock() {
    Attachment& self = attachment_or_throw(this);
    if (mutex_.owner() == self.token && thread_.load(std::memory_order_relaxed) == thread_tag()) {
        ++depth_;
        return;
    }
    mutex_.lock_named("name-index");
    thread_.store(thread_tag(), std::memory_order_relaxed);
    depth_ = 1;
}

bool SegmentRecursiveMutex::try_lock() {
    Attachment& self = attachment_or_throw(this);
    if (mutex_.owner() == self.token && thread_.load(std::memory_order_relaxed) == thread_tag()) {
        ++depth_;
        return true;
    }
    if (!mutex_.try_lock()) {
        return false;
    }
    thread_.store(thread_tag(), std::memory_order_relaxed);
    depth_ = 1;
    return true;
}

void SegmentRecursiveMutex::unlock() {
    if (--depth_ == 0) {
        thread_.store(0, std::memory_order_relaxed);
        mutex_.unlock();
    }
}

}  // namespace strata::shm_detail
