// SPDX-License-Identifier: MIT
// The allocator behind strata's shared containers (docs/shm.md).
//
// Objects of a Segment live in a Boost.Interprocess segment manager whose
// locks are strata's own: a futex word whose owner is a 64-bit token unique
// to one attachment of the segment (never a thread id, so users in different
// pid namespaces never collide), with bounded waits that check whether the
// owner is still alive. A user that dies holding the allocator's lock leaves
// the segment marked broken and the survivors get segment_broken naming it,
// never a hang.
//
// strata::allocator<T> allocates in the segment through offset pointers, so a
// container works at whatever address each process maps the segment. When the
// segment is full it throws strata::out_of_space (a std::bad_alloc) whose
// message names the segment, its size, what is free and the request.
//
// Thread safety: allocation and deallocation may run from any thread of any
// process; the containers themselves are as thread-safe as std containers
// (concurrent readers, one writer).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <boost/interprocess/indexes/iset_index.hpp>
#include <boost/interprocess/mem_algo/rbtree_best_fit.hpp>
#include <boost/interprocess/offset_ptr.hpp>
#include <boost/interprocess/segment_manager.hpp>

namespace strata {

/// Thrown by allocations in a full segment: names segment, size, free bytes and request.
class out_of_space : public std::bad_alloc {
public:
    explicit out_of_space(std::string message) : message_(std::move(message)) {}
    [[nodiscard]] const char* what() const noexcept override { return message_.c_str(); }

private:
    std::string message_;
};

/// Thrown by a segment operation when a user died holding one of the
/// segment's locks: the segment is marked broken, the message names the user.
class segment_broken : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

namespace shm_detail {

/// A lock in shared memory whose owner is an attachment token (see segment.hpp).
/// lock() waits in bounded steps and checks the owner's liveness between them;
/// when the owner is dead it marks the segment broken and throws segment_broken.
class SegmentMutex {
public:
    SegmentMutex() = default;
    SegmentMutex(const SegmentMutex&) = delete;
    SegmentMutex& operator=(const SegmentMutex&) = delete;

    void lock();
    bool try_lock();
    template <class TimePoint>
    bool timed_lock(const TimePoint&) {
        lock();
        return true;
    }
    void unlock();

    [[nodiscard]] std::uint64_t owner() const noexcept { return owner_.load(std::memory_order_relaxed); }

private:
    friend class SegmentRecursiveMutex;
    /// lock(), naming the lock `what` ("allocator", "name-index") in the broken reason.
    void lock_named(const char* what);

    std::atomic<std::uint64_t> owner_{0};
    std::atomic<std::uint32_t> waiters_{0};
};

/// The recursive variant Boost's segment manager uses for its name index.
class SegmentRecursiveMutex {
public:
    SegmentRecursiveMutex() = default;
    SegmentRecursiveMutex(const SegmentRecursiveMutex&) = delete;
    SegmentRecursiveMutex& operator=(const SegmentRecursiveMutex&) = delete;

    void lock();
    bool try_lock();
    template <class TimePoint>
    bool timed_lock(const TimePoint&) {
        lock();
        return true;
    }
    void unlock();

private:
    SegmentMutex mutex_;
    std::atomic<std::uint64_t> thread_{0};
    std::uint32_t depth_ = 0;
};

struct MutexFamily {
    using mutex_type = SegmentMutex;
    using recursive_mutex_type = SegmentRecursiveMutex;
};

using MemoryAlgorithm = boost::interprocess::rbtree_best_fit<MutexFamily, boost::interprocess::offset_ptr<void>>;
using SegmentManager = boost::interprocess::segment_manager<char, MemoryAlgorithm, boost::interprocess::iset_index>;

/// Allocates `bytes` aligned to `alignment` in the segment; throws out_of_space or segment_broken.
void* allocate_bytes(SegmentManager* manager, std::size_t bytes, std::size_t alignment);
void deallocate_bytes(SegmentManager* manager, void* pointer) noexcept;

}  // namespace shm_detail

/// An allocator for containers in a Segment (Segment::get_allocator()).
/// Equal when they allocate in the same segment.
template <class T>
class allocator {
public:
    using value_type = T;
    using pointer = boost::interprocess::offset_ptr<T>;
    using const_pointer = boost::interprocess::offset_ptr<const T>;
    using void_pointer = boost::interprocess::offset_ptr<void>;
    using const_void_pointer = boost::interprocess::offset_ptr<const void>;
    using size_type = std::size_t;
    using difference_type = std::ptrdiff_t;
    using propagate_on_container_copy_assignment = std::false_type;
    using propagate_on_container_move_assignment = std::true_type;
    using propagate_on_container_swap = std::true_type;
    using is_always_equal = std::false_type;
    template <class U>
    struct rebind {
        using other = allocator<U>;
    };

    explicit allocator(shm_detail::SegmentManager* manager) noexcept : manager_(manager) {}
    template <class U>
    allocator(const allocator<U>& other) noexcept
        : manager_(other.segment_manager()) {}  // NOLINT(google-explicit-constructor)

    pointer allocate(size_type count) {
        if (count > static_cast<size_type>(-1) / sizeof(T)) {
            throw std::bad_array_new_length();
        }
        return pointer(static_cast<T*>(shm_detail::allocate_bytes(manager_.get(), count * sizeof(T), alignof(T))));
    }
    // By value, as the allocator requirements spell it.
    void deallocate(pointer p, size_type /*count*/) noexcept {  // NOLINT(performance-unnecessary-value-param)
        shm_detail::deallocate_bytes(manager_.get(), static_cast<void*>(p.get()));
    }

    [[nodiscard]] shm_detail::SegmentManager* segment_manager() const noexcept { return manager_.get(); }

    template <class U>
    bool operator==(const allocator<U>& other) const noexcept {
        return segment_manager() == other.segment_manager();
    }

private:
    boost::interprocess::offset_ptr<shm_detail::SegmentManager> manager_;
};

}  // namespace strata
