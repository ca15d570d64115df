// SPDX-License-Identifier: MIT
// Large message buffers, kept for reuse when dropped.
//
// glibc serves an allocation above its mmap threshold (which adapts up to
// 32 MiB) with a fresh mmap and unmaps it at free, so every large message
// received into a new buffer faults its pages in anew: a 100 MB video frame is
// 24,000 page faults, paid again for each frame, and on a node with 5 % of a
// core that is most of its time. The pool keeps a few dropped buffers and hands
// them out again for a message of a fitting size.
//
// Thread safety: take() and the release of a buffer may run on any thread.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "net/bytes.hpp"

namespace strata::net {

class BufferPool : public std::enable_shared_from_this<BufferPool> {
public:
    struct Limits {
        std::size_t min_bytes = std::size_t{1} << 20;    ///< smaller buffers are not kept (malloc reuses them)
        std::size_t max_bytes = std::size_t{256} << 20;  ///< bytes kept at most
        std::size_t max_buffers = 4;                     ///< buffers kept at most
    };
    static std::shared_ptr<BufferPool> create(Limits limits);
    static std::shared_ptr<BufferPool> create() { return create(Limits{}); }

    /// A buffer of `size` bytes, contents unspecified: a kept one whose capacity is between
    /// `size` and twice it, else a new one. When its last reference goes, it is kept if it is
    /// large enough and the limits allow, else freed. Throws std::bad_alloc as `new` does.
    std::shared_ptr<Bytes> take(std::size_t size);

    /// Buffers kept now (for tests).
    [[nodiscard]] std::size_t kept() const;

private:
    explicit BufferPool(Limits limits) : limits_(limits) { kept_.reserve(limits.max_buffers); }
    void give_back(Bytes* buffer) noexcept;

    Limits limits_;
    mutable std::mutex mu_;
    std::vector<std::unique_ptr<Bytes>> kept_;
    std::size_t kept_bytes_ = 0;
};

}  // namespace strata::net
