// SPDX-License-Identifier: MIT
// The byte buffer of a message: a std::vector<std::byte> whose new elements
// are left uninitialized.
//
// A message buffer is always written whole before it is read (by memcpy when
// a message is posted, by MPI when one is received), so the zeroing that
// std::vector<std::byte>(n) does first only costs time: a 2 MB video frame
// passes through several buffers on its way, and zeroing each of them took a
// tenth of a DSM server's CPU in the video pipeline. Everything else about the
// vector is the standard one (contiguous, a span can view it); growth by
// push_back or insert value-initializes as usual.
//
// Buffers of kNodeArenaMinBytes (1 MiB) or more come from the process's node
// arena once one is installed (shm/node_arena.hpp: the DSM installs it to hand
// same-node ranks its buffers by reference), else from the heap.
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace strata::shm_detail {
/// From the installed node arena (null: none, or no room): shm/node_arena.cpp.
void* node_arena_allocate(std::size_t bytes) noexcept;
/// Frees `p` if the node arena gave it (true).
bool node_arena_deallocate(void* p) noexcept;
/// Smaller buffers stay on the heap (malloc serves them well and no one shares them).
inline constexpr std::size_t kNodeArenaMinBytes = std::size_t{1} << 20;
}  // namespace strata::shm_detail

namespace strata::net {

/// std::allocator, except that construction without arguments default-initializes
/// (leaves a byte as it is) instead of value-initializing (zeroing) it.
template <class T>
struct OverwriteAllocator : std::allocator<T> {
    template <class U>
    struct rebind {
        using other = OverwriteAllocator<U>;
    };
    OverwriteAllocator() noexcept = default;
    template <class U>
    explicit OverwriteAllocator(const OverwriteAllocator<U>& /*other*/) noexcept {}

    T* allocate(std::size_t n) {
        if (n * sizeof(T) >= shm_detail::kNodeArenaMinBytes) {
            if (void* p = shm_detail::node_arena_allocate(n * sizeof(T))) {
                return static_cast<T*>(p);
            }
        }
        return std::allocator<T>::allocate(n);
    }
    void deallocate(T* p, std::size_t n) noexcept {
        if (n * sizeof(T) >= shm_detail::kNodeArenaMinBytes && shm_detail::node_arena_deallocate(p)) {
            return;
        }
        std::allocator<T>::deallocate(p, n);
    }

    template <class U>
    void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
        ::new (static_cast<void*>(p)) U;
    }
    template <class U, class... Args>
    void construct(U* p, Args&&... args) {
        ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }
};

/// A message's bytes (kind byte or header first).
using Bytes = std::vector<std::byte, OverwriteAllocator<std::byte>>;

}  // namespace strata::net
