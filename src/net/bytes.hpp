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
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

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
