// SPDX-License-Identifier: MIT
// A Chase–Lev work-stealing deque (Chase & Lev 2005; memory orders after Lê
// et al., PPoPP 2013). The owner pushes and pops at the bottom; any thread
// steals from the top. The buffer grows by doubling; old buffers are kept
// until the deque is destroyed, because a thief may still read from one.
//
// Top and bottom use sequentially consistent operations instead of the
// paper's standalone fences: ThreadSanitizer understands these, and the cost
// is one locked instruction on the owner's pop.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace strata::runtime::detail {

template <class T>
class WorkDeque {
public:
    explicit WorkDeque(std::size_t capacity = 256) {
        buffers_.push_back(std::make_unique<Buffer>(capacity));
        buffer_.store(buffers_.back().get(), std::memory_order_relaxed);
    }

    /// Owner only.
    void push(T* item) {
        const std::int64_t b = bottom_.load(std::memory_order_relaxed);
        const std::int64_t t = top_.load(std::memory_order_acquire);
        Buffer* buffer = buffer_.load(std::memory_order_relaxed);
        if (b - t >= static_cast<std::int64_t>(buffer->size())) {
            buffer = grow(buffer, b, t);
        }
        buffer->put(b, item);
        bottom_.store(b + 1, std::memory_order_seq_cst);
    }

    /// Owner only; nullptr when empty.
    T* pop() {
        const std::int64_t b = bottom_.load(std::memory_order_relaxed) - 1;
        Buffer* buffer = buffer_.load(std::memory_order_relaxed);
        bottom_.store(b, std::memory_order_seq_cst);
        std::int64_t t = top_.load(std::memory_order_seq_cst);
        if (t > b) {  // empty
            bottom_.store(b + 1, std::memory_order_relaxed);
            return nullptr;
        }
        T* item = buffer->get(b);
        if (t == b) {  // the last item: race the thieves for it
            if (!top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst, std::memory_order_relaxed)) {
                item = nullptr;
            }
            bottom_.store(b + 1, std::memory_order_relaxed);
        }
        return item;
    }

    /// Any thread; nullptr when empty or when another thief won the race.
    T* steal() {
        std::int64_t t = top_.load(std::memory_order_seq_cst);
        const std::int64_t b = bottom_.load(std::memory_order_seq_cst);
        if (t >= b) {
            return nullptr;
        }
        Buffer* buffer = buffer_.load(std::memory_order_acquire);
        T* item = buffer->get(t);
        if (!top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst, std::memory_order_relaxed)) {
            return nullptr;
        }
        return item;
    }

    /// Approximate: exact only when no one pushes, pops or steals meanwhile.
    [[nodiscard]] std::int64_t size() const noexcept {
        const std::int64_t b = bottom_.load(std::memory_order_relaxed);
        const std::int64_t t = top_.load(std::memory_order_relaxed);
        return b > t ? b - t : 0;
    }

private:
    class Buffer {
    public:
        explicit Buffer(std::size_t size) : mask_(size - 1), slots_(size) {}
        [[nodiscard]] std::size_t size() const noexcept { return mask_ + 1; }
        void put(std::int64_t i, T* item) noexcept {
            slots_[static_cast<std::size_t>(i) & mask_].store(item, std::memory_order_relaxed);
        }
        T* get(std::int64_t i) const noexcept {
            return slots_[static_cast<std::size_t>(i) & mask_].load(std::memory_order_relaxed);
        }

    private:
        std::size_t mask_;
        std::vector<std::atomic<T*>> slots_;
    };

    Buffer* grow(Buffer* old, std::int64_t b, std::int64_t t) {
        buffers_.push_back(std::make_unique<Buffer>(old->size() * 2));
        Buffer* bigger = buffers_.back().get();
        for (std::int64_t i = t; i < b; ++i) {
            bigger->put(i, old->get(i));
        }
        buffer_.store(bigger, std::memory_order_release);
        return bigger;
    }

    alignas(64) std::atomic<std::int64_t> top_{0};
    alignas(64) std::atomic<std::int64_t> bottom_{0};
    std::atomic<Buffer*> buffer_{nullptr};
    std::vector<std::unique_ptr<Buffer>> buffers_;  // owner only; freed with the deque
};

}  // namespace strata::runtime::detail
