// SPDX-License-Identifier: MIT
// BufferPool (src/net/buffer_pool.hpp): large dropped buffers come back for a
// fitting size, within the pool's limits; small ones are never kept.
#include <gtest/gtest.h>

#include "net/buffer_pool.hpp"

namespace strata::net {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

TEST(BufferPool, a_dropped_large_buffer_is_handed_out_again_for_a_fitting_size) {
    auto pool = BufferPool::create({.min_bytes = kMiB, .max_bytes = 64 * kMiB, .max_buffers = 4});
    auto first = pool->take(8 * kMiB);
    ASSERT_EQ(first->size(), 8 * kMiB);
    const std::byte* where = first->data();
    first.reset();
    EXPECT_EQ(pool->kept(), 1U);
    auto again = pool->take(6 * kMiB);  // within [capacity / 2, capacity]
    EXPECT_EQ(again->data(), where);
    EXPECT_EQ(again->size(), 6 * kMiB);
    EXPECT_EQ(pool->kept(), 0U);
}

TEST(BufferPool, a_kept_buffer_twice_the_size_or_smaller_than_asked_is_not_used) {
    auto pool = BufferPool::create({.min_bytes = kMiB, .max_bytes = 64 * kMiB, .max_buffers = 4});
    pool->take(8 * kMiB).reset();
    auto small = pool->take(3 * kMiB);  // 8 MiB would waste more than half
    EXPECT_EQ(small->size(), 3 * kMiB);
    auto large = pool->take(9 * kMiB);
    EXPECT_EQ(large->size(), 9 * kMiB);
    EXPECT_EQ(pool->kept(), 1U);  // the 8 MiB one, still kept
}

TEST(BufferPool, small_buffers_are_never_kept_and_the_limits_bound_what_is) {
    auto pool = BufferPool::create({.min_bytes = kMiB, .max_bytes = 20 * kMiB, .max_buffers = 2});
    pool->take(kMiB / 2).reset();
    EXPECT_EQ(pool->kept(), 0U);
    auto a = pool->take(8 * kMiB);
    auto b = pool->take(8 * kMiB);
    auto c = pool->take(2 * kMiB);
    a.reset();
    b.reset();
    EXPECT_EQ(pool->kept(), 2U);
    c.reset();  // a third buffer: beyond max_buffers
    EXPECT_EQ(pool->kept(), 2U);
    pool->take(8 * kMiB).reset();
    auto d = pool->take(8 * kMiB);
    auto e = pool->take(8 * kMiB);
    auto f = pool->take(8 * kMiB);
    d.reset();
    e.reset();
    f.reset();  // 24 MiB would pass max_bytes
    EXPECT_EQ(pool->kept(), 2U);
}

TEST(BufferPool, a_buffer_outliving_its_pools_last_owner_still_goes_back_safely) {
    auto pool = BufferPool::create({.min_bytes = kMiB, .max_bytes = 64 * kMiB, .max_buffers = 4});
    auto buffer = pool->take(2 * kMiB);
    std::weak_ptr<BufferPool> watch = pool;
    pool.reset();
    EXPECT_FALSE(watch.expired());  // the buffer keeps it
    (*buffer)[0] = std::byte{7};
    buffer.reset();
    EXPECT_TRUE(watch.expired());
}

}  // namespace
}  // namespace strata::net
