// SPDX-License-Identifier: MIT
// System calls per handoff through a port between two processes, counted per
// thread by perf tracepoint counters (src/core/syscall_counter.hpp): a blocking
// handoff costs the consumer's recv at most one futex wait and the producer's
// commit at most one futex wake; a busy-poll commit makes none. The consumer's
// liveness checks (one fcntl per peer every 20 ms of waiting) are the only
// other calls allowed.
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "core/syscall_counter.hpp"
#include "integration/shm_process.hpp"
#include "support/capability.hpp"
#include "unit/shm_test_support.hpp"

namespace strata {
namespace {

using Clock = std::chrono::steady_clock;
using core::SyscallCounter;

constexpr int kHandoffs = 300;
constexpr auto kPace = std::chrono::microseconds(300);  // long enough for the consumer to fall asleep

/// System calls of this thread over a stretch of work: all of them, and futex calls.
struct Calls {
    std::uint64_t all = 0;
    std::uint64_t futex = 0;
};

struct Counters {
    SyscallCounter all;
    SyscallCounter futex;

    static std::optional<Counters> open(std::string* why) {
        auto all = SyscallCounter::open("raw_syscalls/sys_enter", why);
        auto futex = SyscallCounter::open("syscalls/sys_enter_futex", why);
        if (!all || !futex) {
            return std::nullopt;
        }
        return Counters{std::move(*all), std::move(*futex)};
    }

    /// Counts the calls `work` makes (the counters' own reads excluded).
    template <class Work>
    Calls count(Work&& work) const {
        const std::uint64_t all0 = all.read();
        const std::uint64_t futex0 = futex.read();
        work();
        const std::uint64_t all1 = all.read();
        const std::uint64_t futex1 = futex.read();
        return {all1 - all0 - 2, futex1 - futex0};  // minus futex.read() before and all.read() after
    }
};

/// What the producer child counted, in memory shared with the parent.
struct ChildReport {
    std::atomic<std::uint64_t> all{0};
    std::atomic<std::uint64_t> futex{0};
    std::atomic<std::int64_t> elapsed_ns{0};
};

/// Liveness checks allowed in `elapsed`: one per 20 ms tick, plus the edges.
std::uint64_t liveness_allowance(std::int64_t elapsed_ns) {
    return static_cast<std::uint64_t>(elapsed_ns / 20'000'000) + 2;
}

void pace() {
    const auto until = Clock::now() + kPace;
    while (Clock::now() < until) {
    }
}

/// The producer child: counts the system calls of its kHandoffs paced commits.
int produce_counted(const test::ShmFixture& f, PortSync sync, ChildReport* report) {
    std::string why;
    auto counters = Counters::open(&why);
    STRATA_CHILD_CHECK(counters.has_value());
    auto seg = f.open(SegmentMode::open_only, 0);
    STRATA_CHILD_CHECK_OK(seg);
    auto out = seg->port("p", PortRole::producer, {.sync = sync});
    STRATA_CHILD_CHECK_OK(out);
    // Only commit is counted: a loan may have to wait for a slot when the
    // consumer lost its core for a while (backpressure, not the handoff).
    Calls calls;
    const auto start = Clock::now();
    for (int i = 0; i < kHandoffs; ++i) {
        pace();
        auto loan = out->loan();
        STRATA_CHILD_CHECK_OK(loan);
        bool committed = false;
        const Calls c = counters->count([&] { committed = out->commit(std::move(*loan), 8).has_value(); });
        STRATA_CHILD_CHECK(committed);
        calls.all += c.all;
        calls.futex += c.futex;
    }
    report->elapsed_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
    report->all = calls.all;
    report->futex = calls.futex;
    return 0;
}

class ShmPortSyscalls : public ::testing::Test {
protected:
    void SetUp() override {
        std::string why;
        counters = Counters::open(&why);
        STRATA_REQUIRE(counters.has_value(), why);
        // The port reads the steady clock on every call: where that is a system
        // call (no vDSO clock source), the counts below mean nothing.
        const Calls clock = counters->count([] {
            for (int i = 0; i < 10; ++i) {
                (void)Clock::now();
            }
        });
        STRATA_REQUIRE(clock.all == 0, "clock_gettime served by the vDSO (here it makes system calls)");
        void* mem = ::mmap(nullptr, sizeof(ChildReport), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        ASSERT_NE(mem, MAP_FAILED);
        report = ::new (mem) ChildReport();
    }
    void TearDown() override {
        if (report != nullptr) {
            ::munmap(report, sizeof(ChildReport));
        }
    }

    /// Runs kHandoffs paced handoffs from a producer child; the parent's consumer
    /// receives and releases each. Returns the calls of the consumer's recv().
    Calls handoffs(PortSync sync) {
        auto seg = fixture.open(SegmentMode::create_only);
        EXPECT_TRUE(seg.has_value());
        if (!seg) {
            return {};
        }
        const PortOptions shape{.slots = 2, .slot_bytes = 64, .consumers = 1, .sync = sync};
        auto in = seg->port("p", PortRole::consumer, shape);
        EXPECT_TRUE(in.has_value());
        if (!in) {
            return {};
        }
        // Producer and consumer on cores of their own: a busy-poll pair sharing one core (a loaded
        // machine can put them there) would make each wait for the other to yield.
        cpu_set_t all_cpus;
        CPU_ZERO(&all_cpus);
        ::sched_getaffinity(0, sizeof all_cpus, &all_cpus);
        const bool pinned = CPU_COUNT(&all_cpus) >= 2;
        const auto pin_to = [&](int nth) {
            cpu_set_t one;
            CPU_ZERO(&one);
            int seen = 0;
            for (std::size_t cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
                if (CPU_ISSET(cpu, &all_cpus) && seen++ == nth) {
                    CPU_SET(cpu, &one);
                    break;
                }
            }
            ::sched_setaffinity(0, sizeof one, &one);
        };
        const pid_t producer = test::spawn([&] {
            if (pinned) {
                pin_to(0);
            }
            return produce_counted(fixture, sync, report);
        });
        if (pinned) {
            pin_to(1);
        }
        // Only recv is counted: a release may have to wake a producer that
        // waits for a slot (backpressure, not the handoff).
        int received = 0;
        Calls calls;
        const auto start = Clock::now();
        for (; received < kHandoffs; ++received) {
            std::optional<Result<Sample>> sample;
            const Calls c = counters->count([&] { sample.emplace(in->recv(std::chrono::seconds(20))); });
            calls.all += c.all;
            calls.futex += c.futex;
            if (!*sample) {
                ADD_FAILURE() << (*sample).error().what();
                break;
            }
        }
        consumer_elapsed_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
        if (pinned) {
            ::sched_setaffinity(0, sizeof all_cpus, &all_cpus);
        }
        EXPECT_EQ(received, kHandoffs);
        const auto status = test::wait_for_child(producer);
        EXPECT_TRUE(status.succeeded()) << status.describe();
        return calls;
    }

    test::ShmFixture fixture;
    std::optional<Counters> counters;
    ChildReport* report = nullptr;
    std::int64_t consumer_elapsed_ns = 0;
};

TEST_F(ShmPortSyscalls, the_counters_count_one_direct_system_call_as_one) {
    const Calls none = counters->count([] {});
    const Calls one = counters->count([] { (void)::syscall(SYS_getppid); });
    EXPECT_EQ(none.all, 0U);
    EXPECT_EQ(one.all, 1U);
    EXPECT_EQ(one.futex, 0U);
}

TEST_F(ShmPortSyscalls, a_blocking_handoff_costs_one_futex_wait_and_one_futex_wake_and_no_other_call) {
    const Calls consumer = handoffs(PortSync::blocking);
    const std::uint64_t n = kHandoffs;
    // The consumer slept for (nearly) every message: the blocking path is what was counted.
    EXPECT_GE(consumer.futex, n / 4) << "the consumer hardly ever slept: the pacing did not work";
    // A wait that outlasts the liveness period (the producer off its core
    // under load) times out, checks the peers once (the one other call) and
    // waits again: one more futex call per liveness check, and no other.
    const std::uint64_t liveness_checks = consumer.all - consumer.futex;
    EXPECT_LE(consumer.futex, n + liveness_checks)
        << "more than one futex call per handoff in the consumer, " << liveness_checks << " liveness checks apart";
    EXPECT_LE(liveness_checks, liveness_allowance(consumer_elapsed_ns))
        << "system calls other than the futex wait in the consumer: " << consumer.all << " in all";
    EXPECT_LE(report->futex.load(), n) << "more than one futex call per handoff in the producer";
    EXPECT_GE(report->futex.load(), n / 4) << "the producer hardly ever woke the consumer";
    EXPECT_EQ(report->all.load(), report->futex.load())
        << "system calls other than the futex wake in the producer's commits: " << report->all.load() << " in all";
    RecordProperty("consumer_calls_per_handoff", std::to_string(static_cast<double>(consumer.all) / n));
    RecordProperty("producer_calls_per_handoff", std::to_string(static_cast<double>(report->all.load()) / n));
}

TEST_F(ShmPortSyscalls, a_busy_poll_producer_makes_no_system_call_per_handoff) {
    (void)handoffs(PortSync::busy_poll);
    EXPECT_EQ(report->all.load(), 0U) << "a busy-poll consumer never sleeps, so a commit has nobody to wake";
}

}  // namespace
}  // namespace strata
