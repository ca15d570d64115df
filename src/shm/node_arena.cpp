// SPDX-License-Identifier: MIT
// NodeArena and PeerArena (node_arena.hpp).
#include "shm/node_arena.hpp"

#include <cerrno>
#include <cstring>
#include <iterator>
#include <new>
#include <string>
#include <utility>

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shm/layout.hpp"

namespace strata::shm_detail {
namespace {

/// The arena's first page: who it is.
struct ArenaHead {
    static constexpr std::uint64_t kMagic = 0x616e657261747473ULL;  // "sttarena"
    std::uint64_t magic = 0;
    std::uint64_t capacity = 0;
    std::array<std::uint64_t, 2> id{};
    std::atomic<std::uint32_t> doorbell{0};  ///< rung: +1 (a futex word)
    std::atomic<std::uint32_t> sleepers{0};  ///< threads dozing on it
};

ArenaHead* head_of(std::byte* base) {
    return std::launder(reinterpret_cast<ArenaHead*>(base));
}

void ring_doorbell(ArenaHead* head) {
    if (head->sleepers.load(std::memory_order_seq_cst) != 0) {
        head->doorbell.fetch_add(1, std::memory_order_seq_cst);
        futex_wake_all(&head->doorbell);  // shared futex (layout.hpp): other processes map the word
    }
}

constexpr std::size_t round_up(std::size_t n, std::size_t to) {
    return (n + to - 1) / to * to;
}

std::mutex g_install_mu;
std::atomic<NodeArena*> g_installed{nullptr};

}  // namespace

NodeArena* NodeArena::installed() noexcept {
    return g_installed.load(std::memory_order_acquire);
}

Result<NodeArena*> NodeArena::install() {
    std::lock_guard lock(g_install_mu);
    if (auto* a = installed()) {
        return a;
    }
    std::array<std::uint64_t, 2> id{};
    if (::getrandom(id.data(), sizeof id, 0) != static_cast<ssize_t>(sizeof id)) {
        return make_error(Errc::io_error, "node arena: getrandom: {}", std::strerror(errno));
    }
    const int fd = ::memfd_create("strata-node-arena", MFD_CLOEXEC);
    if (fd < 0) {
        return make_error(Errc::io_error, "node arena: memfd_create: {}", std::strerror(errno));
    }
    if (::ftruncate(fd, static_cast<off_t>(kCapacity)) != 0) {
        const int e = errno;
        ::close(fd);
        return make_error(Errc::io_error, "node arena: ftruncate to {} bytes: {}", kCapacity, std::strerror(e));
    }
    void* base = ::mmap(nullptr, kCapacity, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
    if (base == MAP_FAILED) {
        const int e = errno;
        ::close(fd);
        return make_error(Errc::io_error, "node arena: mmap of {} bytes: {}", kCapacity, std::strerror(e));
    }
    auto* arena = new NodeArena();  // lives as long as the process: buffers may outlive every user
    arena->fd_ = fd;
    arena->base_ = static_cast<std::byte*>(base);
    arena->id_ = id;
    auto* head = new (base) ArenaHead();
    head->magic = ArenaHead::kMagic;
    head->capacity = kCapacity;
    head->id = id;
    arena->free_.emplace(kPage, kCapacity - kPage);
    ::pthread_atfork(&NodeArena::before_fork, &NodeArena::after_fork_parent, &NodeArena::after_fork_child);
    g_installed.store(arena, std::memory_order_release);
    return arena;
}

void* NodeArena::allocate(std::size_t n) noexcept {
    if (n == 0 || n > kCapacity) {
        return nullptr;
    }
    const std::uint64_t length = round_up(n, kPage) + kPage;
    std::lock_guard lock(mu_);
    for (auto it = free_.begin(); it != free_.end(); ++it) {
        if (it->second < length) {
            continue;
        }
        const std::uint64_t offset = it->first;
        const std::uint64_t rest = it->second - length;
        try {
            live_.emplace(offset, length);
            free_.erase(it);
            if (rest > 0) {
                free_.emplace(offset + length, rest);
            }
        } catch (const std::bad_alloc&) {
            live_.erase(offset);
            return nullptr;  // the heap then serves the buffer
        }
        used_ += length;
        auto* block = new (base_ + offset) ArenaBlock();
        block->length = length - kPage;
        return base_ + offset + kPage;
    }
    return nullptr;
}

bool NodeArena::deallocate(void* p) noexcept {
    auto* at = static_cast<std::byte*>(p);
    if (at < base_ + 2 * kPage || at >= base_ + kCapacity) {
        return false;
    }
    const auto offset = static_cast<std::uint64_t>(at - base_) - kPage;
    std::lock_guard lock(mu_);
    auto it = live_.find(offset);
    if (it == live_.end()) {
        return false;
    }
    std::uint64_t start = offset;
    std::uint64_t length = it->second;
    // The live entry's node becomes the free one: giving a range back never allocates.
    auto node = live_.extract(it);
    used_ -= length;
    if (is_shared()) {
        // Give the pages back: the pool above (net/buffer_pool.hpp) keeps the buffers worth keeping.
        ::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(start),
                    static_cast<off_t>(length));
    }
    auto next = free_.lower_bound(start);
    if (next != free_.end() && next->first == start + length) {
        length += next->second;
        next = free_.erase(next);
    }
    if (next != free_.begin()) {
        auto prev = std::prev(next);
        if (prev->first + prev->second == start) {
            start = prev->first;
            length += prev->second;
            free_.erase(prev);
        }
    }
    node.key() = start;
    node.mapped() = length;
    free_.insert(std::move(node));
    return true;
}

ArenaBlock* NodeArena::block_of(const void* p, std::size_t n) const noexcept {
    const auto* at = static_cast<const std::byte*>(p);
    if (at < base_ || at >= base_ + kCapacity) {
        return nullptr;
    }
    const auto offset = static_cast<std::uint64_t>(at - base_);
    std::lock_guard lock(mu_);
    auto it = live_.upper_bound(offset);
    if (it == live_.begin()) {
        return nullptr;
    }
    --it;
    if (offset < it->first + kPage || offset + n > it->first + it->second) {
        return nullptr;
    }
    return std::launder(reinterpret_cast<ArenaBlock*>(base_ + it->first));
}

std::uint64_t NodeArena::offset_of(const ArenaBlock* block) const noexcept {
    return static_cast<std::uint64_t>(reinterpret_cast<const std::byte*>(block) - base_);
}

ArenaAnnounce NodeArena::announce() const noexcept {
    return {.pid = static_cast<std::int32_t>(::getpid()), .fd = fd_, .capacity = kCapacity, .id = id_};
}

std::size_t NodeArena::used() const noexcept {
    std::lock_guard lock(mu_);
    return used_;
}

std::uint32_t NodeArena::doze_ticket() noexcept {
    auto* head = head_of(base_);
    head->sleepers.fetch_add(1, std::memory_order_seq_cst);
    return head->doorbell.load(std::memory_order_seq_cst);
}

void NodeArena::doze(std::uint32_t ticket, std::chrono::microseconds limit) noexcept {
    auto* head = head_of(base_);
    if (limit.count() > 0 && head->doorbell.load(std::memory_order_seq_cst) == ticket) {
        futex_wait(&head->doorbell, ticket, std::chrono::nanoseconds(limit).count());
    }
    head->sleepers.fetch_sub(1, std::memory_order_seq_cst);
}

void NodeArena::wake() noexcept {
    ring_doorbell(head_of(base_));
}

void NodeArena::before_fork() noexcept {
    if (auto* a = installed()) {
        a->mu_.lock();
    }
}

void NodeArena::after_fork_parent() noexcept {
    if (auto* a = installed()) {
        a->mu_.unlock();
    }
}

void NodeArena::after_fork_child() noexcept {
    if (auto* a = installed()) {
        a->privatize();
        a->mu_.unlock();
    }
}

// In the child of a fork (mu_ held): the live blocks are copied into private memory that takes
// the shared mapping's place, so the child and its parent never write each other's buffers.
// Only system calls and memcpy: the child of a threaded process may call nothing else.
void NodeArena::privatize() noexcept {
    if (forked_.load(std::memory_order_relaxed)) {
        return;
    }
    forked_.store(true, std::memory_order_release);
    void* copy = ::mmap(nullptr, kCapacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (copy != MAP_FAILED) {
        auto* to = static_cast<std::byte*>(copy);
        std::memcpy(to, base_, kPage);
        for (const auto& [offset, length] : live_) {
            std::memcpy(to + offset, base_ + offset, length);
        }
        if (::mremap(copy, kCapacity, kCapacity, MREMAP_MAYMOVE | MREMAP_FIXED, base_) == MAP_FAILED) {
            ::munmap(copy, kCapacity);  // the child keeps the shared view: it still shares nothing
        }
    }
    ::close(fd_);
    fd_ = -1;
}

Result<PeerArena> PeerArena::open(const ArenaAnnounce& a) {
    const std::string path = "/proc/" + std::to_string(a.pid) + "/fd/" + std::to_string(a.fd);
    const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        return make_error(Errc::io_error, "node arena: open {}: {}", path, std::strerror(errno));
    }
    struct stat st {};
    std::string refused;
    if (::fstat(fd, &st) != 0) {
        refused = std::string("fstat: ") + std::strerror(errno);
    } else if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) {
        refused = "not a file of this user (uid " + std::to_string(st.st_uid) + ")";
    } else if (static_cast<std::uint64_t>(st.st_size) != a.capacity || a.capacity < 2 * NodeArena::kPage) {
        refused = "its size " + std::to_string(st.st_size) + " is not the announced " + std::to_string(a.capacity);
    }
    void* base = MAP_FAILED;
    if (refused.empty()) {
        base = ::mmap(nullptr, a.capacity, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
        if (base == MAP_FAILED) {
            refused = std::string("mmap: ") + std::strerror(errno);
        }
    }
    ::close(fd);
    if (refused.empty()) {
        const auto* head = head_of(static_cast<std::byte*>(base));
        if (head->magic != ArenaHead::kMagic || head->capacity != a.capacity || head->id != a.id) {
            refused = "it is not the announced arena (its id differs)";
            ::munmap(base, a.capacity);
        }
    }
    if (!refused.empty()) {
        return make_error(Errc::permission_denied, "node arena: {} of process {} refused: {}", path, a.pid, refused);
    }
    PeerArena p;
    p.base_ = static_cast<std::byte*>(base);
    p.capacity_ = a.capacity;
    return p;
}

PeerArena::PeerArena(PeerArena&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)), capacity_(std::exchange(other.capacity_, 0)) {}

PeerArena& PeerArena::operator=(PeerArena&& other) noexcept {
    if (this != &other) {
        this->~PeerArena();
        base_ = std::exchange(other.base_, nullptr);
        capacity_ = std::exchange(other.capacity_, 0);
    }
    return *this;
}

PeerArena::~PeerArena() {
    if (base_ != nullptr) {
        ::munmap(base_, capacity_);
    }
}

Result<std::span<const std::byte>> PeerArena::bytes(std::uint64_t offset, std::uint64_t length) const {
    constexpr std::uint64_t page = NodeArena::kPage;
    const bool inside =
        offset >= page && offset % page == 0 && offset <= capacity_ - page && length <= capacity_ - page - offset;
    const auto* block = inside ? std::launder(reinterpret_cast<const ArenaBlock*>(base_ + offset)) : nullptr;
    if (block == nullptr || block->magic != ArenaBlock::kMagic || block->length < length) {
        return make_error(Errc::invalid_argument,
                          "node arena: no block of {} bytes at offset {} in a peer's arena of {} bytes", length, offset,
                          capacity_);
    }
    return std::span<const std::byte>(base_ + offset + page, length);
}

void* node_arena_allocate(std::size_t n) noexcept {
    auto* arena = NodeArena::installed();
    return arena != nullptr && arena->is_shared() ? arena->allocate(n) : nullptr;
}

bool node_arena_deallocate(void* p) noexcept {
    auto* arena = NodeArena::installed();
    return arena != nullptr && arena->deallocate(p);
}

void PeerArena::ring() const noexcept {
    ring_doorbell(head_of(base_));
}

void PeerArena::release(std::uint64_t offset, int reader) const noexcept {
    auto* block = std::launder(reinterpret_cast<ArenaBlock*>(base_ + offset));
    auto& hold = block->holds[static_cast<std::size_t>(reader)];
    std::uint32_t held = hold.load(std::memory_order_relaxed);
    // Never below zero: an owner that found this reader dead has cleared its holds already.
    while (held > 0 && !hold.compare_exchange_weak(held, held - 1, std::memory_order_release)) {
    }
}

}  // namespace strata::shm_detail
