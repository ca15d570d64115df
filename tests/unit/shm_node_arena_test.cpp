// SPDX-License-Identifier: MIT
// The node arena (src/shm/node_arena.hpp): large message buffers live in it
// once installed; another process maps it only as announced; a reference is
// checked against it; a forked child's buffers are its own.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

#include "net/bytes.hpp"
#include "shm/node_arena.hpp"

namespace strata::shm_detail {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

NodeArena& arena() {
    auto installed = NodeArena::install();
    EXPECT_TRUE(installed.has_value()) << installed.error().what();
    return **installed;
}

TEST(NodeArena, large_message_buffers_come_from_the_arena_once_it_is_installed_small_ones_from_the_heap) {
    NodeArena& a = arena();
    const std::size_t before = a.used();
    {
        net::Bytes large(2 * kMiB);
        net::Bytes small(4096);
        EXPECT_NE(a.block_of(large.data(), large.size()), nullptr);
        EXPECT_EQ(a.block_of(small.data(), small.size()), nullptr);
        EXPECT_GE(a.used(), before + 2 * kMiB);
        // A range running past the block's data is no block's.
        EXPECT_EQ(a.block_of(large.data(), large.capacity() + NodeArena::kPage + 1), nullptr);
    }
    EXPECT_EQ(a.used(), before);
}

TEST(NodeArena, freed_neighbours_merge_so_a_larger_buffer_fits_where_they_were) {
    NodeArena& a = arena();
    void* first = a.allocate(kMiB);
    void* second = a.allocate(kMiB);
    ASSERT_NE(first, nullptr);
    ASSERT_NE(second, nullptr);
    ASSERT_EQ(static_cast<std::byte*>(second), static_cast<std::byte*>(first) + kMiB + NodeArena::kPage);
    EXPECT_TRUE(a.deallocate(second));
    EXPECT_TRUE(a.deallocate(first));
    void* both = a.allocate(2 * kMiB + NodeArena::kPage);
    EXPECT_EQ(both, first);
    EXPECT_TRUE(a.deallocate(both));
    int on_stack = 0;
    EXPECT_FALSE(a.deallocate(&on_stack));
}

TEST(PeerArena, reads_a_block_of_the_announced_arena_and_gives_its_holds_back_never_below_zero) {
    NodeArena& a = arena();
    net::Bytes buffer(kMiB);
    std::fill(buffer.begin(), buffer.end(), std::byte{0x5a});
    ArenaBlock* block = a.block_of(buffer.data(), buffer.size());
    ASSERT_NE(block, nullptr);
    auto peer = PeerArena::open(a.announce());
    ASSERT_TRUE(peer.has_value()) << peer.error().what();
    auto bytes = peer->bytes(a.offset_of(block), buffer.size());
    ASSERT_TRUE(bytes.has_value()) << bytes.error().what();
    EXPECT_EQ(std::memcmp(bytes->data(), buffer.data(), buffer.size()), 0);
    block->holds[3].store(2);
    peer->release(a.offset_of(block), 3);
    EXPECT_EQ(block->holds[3].load(), 1U);
    peer->release(a.offset_of(block), 3);
    peer->release(a.offset_of(block), 3);
    EXPECT_EQ(block->holds[3].load(), 0U);
}

TEST(PeerArena, refuses_an_arena_that_is_not_the_announced_one_naming_the_file) {
    ArenaAnnounce other = arena().announce();
    other.id[0] ^= 1;
    auto peer = PeerArena::open(other);
    ASSERT_FALSE(peer.has_value());
    EXPECT_EQ(peer.error().code, Errc::permission_denied);
    EXPECT_NE(std::string(peer.error().what()).find("/proc/"), std::string::npos) << peer.error().what();
    other = arena().announce();
    other.capacity -= NodeArena::kPage;
    EXPECT_FALSE(PeerArena::open(other).has_value());
}

TEST(PeerArena, refuses_a_reference_outside_the_arena_or_where_no_block_starts) {
    NodeArena& a = arena();
    net::Bytes buffer(kMiB);
    const std::uint64_t at = a.offset_of(a.block_of(buffer.data(), buffer.size()));
    auto peer = PeerArena::open(a.announce());
    ASSERT_TRUE(peer.has_value()) << peer.error().what();
    EXPECT_TRUE(peer->bytes(at, kMiB).has_value());
    EXPECT_FALSE(peer->bytes(at, kMiB + 1).has_value());             // past the block
    EXPECT_FALSE(peer->bytes(at + 8, 16).has_value());               // not a page
    EXPECT_FALSE(peer->bytes(0, 16).has_value());                    // the arena's own page
    EXPECT_FALSE(peer->bytes(NodeArena::kCapacity, 1).has_value());  // outside
    auto error = peer->bytes(at + kMiB + NodeArena::kPage, 16);      // no block starts there
    ASSERT_FALSE(error.has_value());
    EXPECT_EQ(error.error().code, Errc::invalid_argument);
}

TEST(NodeArena, a_peer_ringing_the_doorbell_wakes_a_dozing_thread_long_before_its_limit) {
    NodeArena& a = arena();
    auto peer = PeerArena::open(a.announce());
    ASSERT_TRUE(peer.has_value()) << peer.error().what();
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    std::thread ringer([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        for (int i = 0; i < 100 && Clock::now() - start < std::chrono::seconds(5); ++i) {
            peer->ring();  // until the dozer is asleep: a ring before its ticket wakes nothing
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    });
    a.doze(a.doze_ticket(), std::chrono::seconds(10));
    const auto woke = Clock::now() - start;
    ringer.join();
    EXPECT_LT(woke, std::chrono::seconds(3));
    // Nobody rings: the doze lasts its limit.
    const auto quiet = Clock::now();
    a.doze(a.doze_ticket(), std::chrono::milliseconds(30));
    EXPECT_GE(Clock::now() - quiet, std::chrono::milliseconds(25));
}

TEST(NodeArena, a_forked_child_writes_its_own_copy_of_a_buffer_and_shares_nothing) {
    NodeArena& a = arena();
    net::Bytes buffer(2 * kMiB);
    std::fill(buffer.begin(), buffer.end(), std::byte{'p'});
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        bool ok = buffer[0] == std::byte{'p'} && buffer.back() == std::byte{'p'} && !a.is_shared();
        std::fill(buffer.begin(), buffer.end(), std::byte{'c'});
        net::Bytes fresh(2 * kMiB);  // the child's new buffers come from its heap
        ok = ok && a.block_of(fresh.data(), fresh.size()) == nullptr;
        ::_exit(ok ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child saw the arena wrong";
    EXPECT_EQ(buffer[0], std::byte{'p'});
    EXPECT_EQ(buffer.back(), std::byte{'p'});
    EXPECT_TRUE(a.is_shared());
}

}  // namespace
}  // namespace strata::shm_detail
