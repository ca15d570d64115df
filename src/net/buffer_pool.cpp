// SPDX-License-Identifier: MIT
// BufferPool (buffer_pool.hpp).
#include "net/buffer_pool.hpp"

namespace strata::net {

std::shared_ptr<BufferPool> BufferPool::create(Limits limits) {
    return std::shared_ptr<BufferPool>(new BufferPool(limits));
}

std::shared_ptr<Bytes> BufferPool::take(std::size_t size) {
    if (size < limits_.min_bytes) {
        return std::make_shared<Bytes>(size);
    }
    std::unique_ptr<Bytes> buffer;
    {
        std::lock_guard lock(mu_);
        std::size_t best = kept_.size();
        for (std::size_t i = 0; i < kept_.size(); ++i) {
            const std::size_t cap = kept_[i]->capacity();
            if (cap >= size && cap / 2 <= size && (best == kept_.size() || cap < kept_[best]->capacity())) {
                best = i;
            }
        }
        if (best < kept_.size()) {
            buffer = std::move(kept_[best]);
            kept_.erase(kept_.begin() + static_cast<std::ptrdiff_t>(best));
            kept_bytes_ -= buffer->capacity();
        }
    }
    if (buffer) {
        buffer->resize(size);  // within its capacity: no allocation, and no zeroing (bytes.hpp)
    } else {
        buffer = std::make_unique<Bytes>(size);
    }
    // The deleter keeps the pool alive as long as one of its buffers is.
    return {buffer.release(), [pool = shared_from_this()](Bytes* b) { pool->give_back(b); }};
}

void BufferPool::give_back(Bytes* buffer) noexcept {
    std::unique_ptr<Bytes> owned(buffer);
    std::lock_guard lock(mu_);
    const std::size_t cap = owned->capacity();
    if (kept_.size() < limits_.max_buffers && kept_bytes_ + cap <= limits_.max_bytes) {
        kept_bytes_ += cap;
        kept_.push_back(std::move(owned));  // capacity was reserved below: push_back cannot throw
    }
}

std::size_t BufferPool::kept() const {
    std::lock_guard lock(mu_);
    return kept_.size();
}

}  // namespace strata::net
