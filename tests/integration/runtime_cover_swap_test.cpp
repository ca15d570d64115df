// SPDX-License-Identifier: MIT
// The cover role changes hands (src/runtime/cover.cpp, take_cover_role), with
// the real BPF monitor on one CPU: a worker blocks, the cover woken for it
// blocks in a task of its own, and the first worker comes back and starts its
// next task. That worker covers now, at SCHED_IDLE; the blocked cover gets the
// normal policy back, so when it wakes it finishes its task first instead of
// waiting at SCHED_IDLE behind the other's whole task.
//
// Judged by which task ends first, in the tasks' own CPU time: load on the
// machine cannot reorder them, and without the swap the cover (weight 3
// against 1024) would get a few hundred microseconds of the 200 ms the other
// task computes, not the 20 ms it needs.
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>

#include <gtest/gtest.h>

#include "runtime_cover_support.hpp"
#include "strata/runtime.hpp"
#include "support/capability.hpp"

namespace strata::runtime {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Computes for `cpu` of the calling thread's own CPU time.
void compute_for(std::chrono::nanoseconds cpu) {
    const auto until = test::thread_cpu_time() + cpu;
    while (test::thread_cpu_time() < until) {
    }
}

struct Pipe {
    int fds[2] = {-1, -1};
    Pipe() { EXPECT_EQ(::pipe(fds), 0); }
    ~Pipe() {
        ::close(fds[0]);
        ::close(fds[1]);
    }
    void read_one() const {
        char byte = 0;
        EXPECT_EQ(::read(fds[0], &byte, 1), 1);
    }
    void write_one() const { EXPECT_EQ(::write(fds[1], "x", 1), 1); }
};

TEST(RuntimeCoverSwap, a_cover_blocked_in_its_task_finishes_it_before_the_task_its_covered_worker_starts_next) {
    STRATA_REQUIRE(test::is_root(), "root, for the BPF monitor and to take a thread back from SCHED_IDLE");
    // The leader's scan out of the way: only the monitor's events act.
    auto sut = test::start_with_ebpf(sched_getcpu(), CoverPriority::idle, 60s);
    ASSERT_NE(sut, nullptr);
    ASSERT_EQ(sut->cover_priority(), CoverPriority::idle) << sut->cover_reason();
    Pipe first_block, cover_block;
    std::atomic<pid_t> first{0}, cover{0};
    std::atomic<bool> go{false}, next_started{false};
    std::atomic<Clock::rep> cover_done{0}, next_done{0};
    TaskGroup group;
    sut->spawn(
        [&] {
            first = static_cast<pid_t>(::gettid());
            while (!go.load()) {
            }
            first_block.read_one();
            // Its next task, queued on its own worker: it runs it next.
            sut->spawn(
                [&] {
                    next_started = true;
                    compute_for(200ms);
                    next_done = Clock::now().time_since_epoch().count();
                },
                &group);
        },
        &group);
    ASSERT_TRUE(test::wait_for([&] { return first.load() != 0; })) << "the first task never started";
    sut->spawn(
        [&] {
            cover = static_cast<pid_t>(::gettid());
            cover_block.read_one();
            compute_for(20ms);
            cover_done = Clock::now().time_since_epoch().count();
        },
        &group);
    go = true;
    // Both blocked in read(): the first task's worker, and the cover woken for it.
    ASSERT_TRUE(test::wait_for([&] {
        return cover.load() != 0 && test::thread_state(first.load()) == 'S' && test::thread_state(cover.load()) == 'S';
    })) << "the first worker and its cover did not both block";
    ASSERT_NE(cover.load(), first.load()) << "the second task ran on the first worker";
    first_block.write_one();
    ASSERT_TRUE(test::wait_for([&] { return next_started.load(); })) << "the next task never started";
    cover_block.write_one();
    sut->wait(group);
    const auto stats = sut->stats()[0];
    std::printf("cover swap: the cover's task ended %.1f ms before the next task; %llu swaps, %llu covers\n",
                static_cast<double>(next_done.load() - cover_done.load()) / 1e6,
                static_cast<unsigned long long>(stats.cover_swaps), static_cast<unsigned long long>(stats.covers));
    EXPECT_LT(cover_done.load(), next_done.load()) << "the woken cover waited behind the next task";
    EXPECT_GE(stats.cover_swaps, 1U) << "no worker took the cover role";
}

}  // namespace
}  // namespace strata::runtime
